import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { kubeBinaries, type TestCluster } from './apiserver.js';

/**
 * A `kubectl create rolebinding …` command as a person pastes it from a status message or the
 * chart's notes, run against the test cluster as its admin. With kubectl itself when
 * scripts/kube-bins.sh built one beside kube-apiserver; otherwise as the one object that command
 * creates (a RoleBinding of the ClusterRole to the service account), through the API. Any other
 * command, or a flag this does not know, is refused rather than guessed at.
 */

export interface RoleBindingCommand {
  name: string;
  namespace: string;
  clusterRole: string;
  serviceAccount: { namespace: string; name: string };
}

export function parseCreateRoleBinding(command: string): RoleBindingCommand {
  const [kubectl, create, kind, name, ...flags] = command.trim().split(/\s+/);
  if (kubectl !== 'kubectl' || create !== 'create' || kind !== 'rolebinding' || name === undefined) {
    throw new Error(`not a kubectl create rolebinding command: ${command}`);
  }
  let namespace: string | undefined;
  let clusterRole: string | undefined;
  let serviceAccount: string | undefined;
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i] ?? '';
    if (flag === '-n' || flag === '--namespace') namespace = flags[++i];
    else if (flag.startsWith('--namespace=')) namespace = flag.slice('--namespace='.length);
    else if (flag.startsWith('--clusterrole=')) clusterRole = flag.slice('--clusterrole='.length);
    else if (flag.startsWith('--serviceaccount=')) serviceAccount = flag.slice('--serviceaccount='.length);
    else throw new Error(`parseCreateRoleBinding: unknown flag ${flag}`);
  }
  const [saNamespace, saName] = (serviceAccount ?? '').split(':');
  if (namespace === undefined || clusterRole === undefined || !saNamespace || !saName) {
    throw new Error(`the command lacks -n, --clusterrole or --serviceaccount=<ns>:<name>: ${command}`);
  }
  return { name, namespace, clusterRole, serviceAccount: { namespace: saNamespace, name: saName } };
}

/** Runs the command; resolves with what ran it. */
export async function runCreateRoleBinding(
  command: string,
  cluster: TestCluster,
): Promise<'kubectl' | 'api'> {
  const parsed = parseCreateRoleBinding(command);
  const kubectl = join(await kubeBinaries(), 'kubectl');
  if (existsSync(kubectl)) {
    const args = [...command.trim().split(/\s+/).slice(1), '--kubeconfig', cluster.kubeconfigPath];
    await new Promise<void>((resolve, reject) => {
      execFile(kubectl, args, (error, _stdout, stderr) =>
        error === null ? resolve() : reject(new Error(`kubectl failed: ${stderr}`)),
      );
    });
    return 'kubectl';
  }
  await cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace: parsed.namespace,
    body: {
      metadata: { name: parsed.name, namespace: parsed.namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: parsed.clusterRole },
      subjects: [{ kind: 'ServiceAccount', ...parsed.serviceAccount }],
    },
  });
  return 'api';
}
