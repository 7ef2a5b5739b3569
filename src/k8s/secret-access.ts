/**
 * What a person is told when the controller may not read a Secret a resource names (the API
 * server answered 403 to its list): which namespace, and what grants it. Kubernetes RBAC cannot
 * narrow list to the Secrets named, so the grant is list and watch on the namespace's Secrets:
 * with the chart, its ClusterRole `<fullname>-secret-reader` bound in that namespace, by the
 * chart itself (rbac.secretNamespaces) or by whoever may create RoleBindings there.
 */

export interface SecretAccessGrant {
  /** The controller's service account, as a RoleBinding's subject names it; unknown: unset. */
  serviceAccount: { namespace: string; name: string } | undefined;
  /** The ClusterRole that reads Secrets; set only by the chart (it made that role). */
  secretReaderRole: string | undefined;
}

/** The kubectl command that binds the secret reader in `namespace`, when both names are known. */
export function secretReaderBindingCommand(namespace: string, grant: SecretAccessGrant): string | undefined {
  const { serviceAccount: sa, secretReaderRole: role } = grant;
  if (sa === undefined || role === undefined) return undefined;
  return (
    `kubectl create rolebinding ${sa.name}-secrets -n ${namespace} ` +
    `--clusterrole=${role} --serviceaccount=${sa.namespace}:${sa.name}`
  );
}

/** One line for a status message and a log line; it names no Secret value, only where and what. */
export function forbiddenSecretsMessage(namespace: string, grant: SecretAccessGrant): string {
  const refused = `the controller may not list Secrets in namespace "${namespace}" (the API server answered 403)`;
  const command = secretReaderBindingCommand(namespace, grant);
  if (command !== undefined) {
    return `${refused}; grant it with the Helm chart's rbac.secretNamespaces (add ${namespace}), or in that namespace: ${command}`;
  }
  const who =
    grant.serviceAccount === undefined
      ? "the controller's identity"
      : `service account ${grant.serviceAccount.namespace}/${grant.serviceAccount.name}`;
  return `${refused}; grant ${who} list and watch on secrets in ${namespace} (a Role and RoleBinding there)`;
}
