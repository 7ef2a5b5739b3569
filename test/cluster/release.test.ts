import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { ContractAgent } from '../peers/contract-agent/contract-agent.js';
import { pushImage, run } from './builds.js';
import { CHART, ClusterClient, clusterInfo, eventually, ROOT } from './harness.js';
import {
  agentOnTheNode,
  bindChannel,
  mention,
  type NodeSlack,
  settledReply,
  slackOnTheNode,
  TestRelease,
} from './peers.js';
import {
  documentedVerifyCommands,
  keyedSigner,
  runStep,
  type Signer,
  substituted,
  tagDigest,
} from './signing.js';

/**
 * A release as .github/workflows/release.yml makes it, up to the upload, on the test cluster's
 * registry (it stands in for ghcr.io; `<owner>` is OWNER): the version from a tag, the image
 * pushed and signed by digest, its SBOM made by syft and attested, the chart packaged, pushed
 * and signed, each by the workflow's own `run:` script. Then docs/releasing.md's verify
 * commands, as written, accept those and refuse what an attacker could put under the same names.
 * Then what a careful user does next: Helm 4 installs the chart by its digest, with the image
 * by its digest, upgrades it after the controller has written status, and uninstalls it.
 */

const { info, skip } = clusterInfo();
const OWNER = 'kourier-release';
const ANSWER = 'Installed by digest, answered by the pod.';

/** What a verify command printed on stdout: one JSON line per verified signature. */
const attestationSchema = z.array(z.object({ payload: z.string() }).loose()).min(1);

describe.skipIf(info === undefined)(
  `the release, signed and verified as docs/releasing.md says, installed by digest with Helm 4${skip === undefined ? '' : ` (skipped: ${skip})`}`,
  () => {
    // The workflow packages and pushes with Helm 3 (tools/helm); the user installs with Helm 4.
    const k3 = new ClusterClient(info as NonNullable<typeof info>);
    const k = k3.withHelm4();
    const release = new TestRelease(k, 'ak-release');
    let signer: Signer;
    let node: NodeSlack;
    let agent: ContractAgent;
    let ns: string;
    let team: string;
    let version: string;
    let image: string;
    let charts: string;
    let imageDigest: string;
    let chartDigest: string;
    let verify: (command: string, digests?: { digest?: string; chartDigest?: string }) => Promise<string>;

    beforeAll(async () => {
      const { info: i } = k;
      signer = await keyedSigner(i.cosign);
      image = `${i.registry}/${OWNER}/agentkourier`;
      charts = `${i.registry}/${OWNER}/charts`;
      verify = (command, digests = {}) =>
        run(
          'bash',
          [
            '-c',
            substituted(command, {
              owner: `${i.registry}/${OWNER}`,
              digest: digests.digest ?? imageDigest,
              chartDigest: digests.chartDigest ?? chartDigest,
              publicKey: signer.publicKey,
            }),
          ],
          { env: signer.env },
        );
      node = await slackOnTheNode(k);
      agent = await agentOnTheNode(k, { defaultAnswer: { chunks: [ANSWER] } });
      ns = await release.prepare('ak-release', node.slack);
      team = await k.namespace('team-release');
    });

    afterAll(async () => {
      await release.remove();
      await node?.close();
      await agent?.close();
    });

    it("Chart.yaml's oldest Kubernetes: the CRDs (CEL rules compiled by the server) and the rendered chart apply server-side", async () => {
      const server = z
        .object({ serverVersion: z.object({ major: z.string(), minor: z.string() }).loose() })
        .loose()
        .parse(JSON.parse(await k.kubectlOk(['version', '-o', 'json'])));
      const claimed = /^>=(\d+)\.(\d+)\./.exec(
        z
          .object({ kubeVersion: z.string() })
          .loose()
          .parse(parseYaml(readFileSync(join(CHART, 'Chart.yaml'), 'utf8'))).kubeVersion,
      );
      expect(`${server.serverVersion.major}.${server.serverVersion.minor}`).toBe(
        `${claimed?.[1]}.${claimed?.[2]}`,
      );
      const crds = await k.kubectlOk([
        'apply',
        '--server-side',
        '--dry-run=server',
        '-f',
        join(CHART, 'crds'),
      ]);
      expect(crds).toMatch(/agentbackends\.agentkourier\.dev serverside-applied/);
      expect(crds).toMatch(/bindings\.agentkourier\.dev serverside-applied/);
      const rendered = await k.helmOk(['template', 'ak-claim', CHART, '-n', 'default']);
      const applied = await k.kubectlOk(
        ['apply', '--server-side', '--dry-run=server', '-n', 'default', '-f', '-'],
        rendered,
      );
      expect(applied).toMatch(/deployment\.apps\/ak-claim-agentkourier serverside-applied/);
    });

    it("the workflow's steps: the image signed by digest, its syft SBOM attested, the chart from the tag pushed and signed", async () => {
      version = (await run(process.execPath, ['scripts/release-version.ts', `v${k.info.appVersion}`])).trim();
      expect(version).toBe(k.info.appVersion);
      imageDigest = await pushImage(k.info.localImage, `${image}:${version}`);
      expect(imageDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
      const vars = { IMAGE: image, DIGEST: imageDigest, VERSION: version };
      await runStep(signer, 'Sign the image (keyless, GitHub OIDC)', vars);
      await runStep(signer, 'SBOM (syft, SPDX JSON)', vars);
      await runStep(signer, 'Attest the SBOM (keyless, GitHub OIDC)', vars);
      // The SBOM is the image's: the Debian base and the npm packages the broker runs on.
      const sbom = z
        .object({ spdxVersion: z.string(), packages: z.array(z.object({ name: z.string() }).loose()) })
        .loose()
        .parse(JSON.parse(readFileSync(join(signer.dir, 'sbom.spdx.json'), 'utf8')));
      expect(sbom.spdxVersion).toMatch(/^SPDX-2\./);
      const names = new Set(sbom.packages.map((p) => p.name));
      for (const pkg of ['zod', '@slack/bolt', 'libc6']) expect(names, `SBOM lists ${pkg}`).toContain(pkg);

      // The chart job: packaged for the image above, pushed, signed by the digest helm reported.
      chartDigest = await pushChart(k3, version, `ghcr.io/${OWNER}/agentkourier`, charts);
      await runStep(signer, 'Sign the chart (keyless, GitHub OIDC)', {
        CHART: `${charts}/agentkourier`,
        DIGEST: chartDigest,
      });
    });

    it("docs/releasing.md's cosign commands, run as written, accept the image, the chart and the SBOM attestation", async () => {
      const commands = documentedVerifyCommands();
      expect(commands.map((c) => c.split(' ').slice(0, 3).join(' '))).toEqual([
        'cosign verify ghcr.io/<owner>/agentkourier@sha256:<digest>',
        'cosign verify ghcr.io/<owner>/charts/agentkourier@sha256:<chart-digest>',
        'cosign verify-attestation ghcr.io/<owner>/agentkourier@sha256:<digest>',
      ]);
      for (const command of commands) await verify(command);
      // The attestation cosign accepted carries the SBOM: an in-toto statement about this digest.
      const said = await verify(commands[2] as string);
      const [first] = attestationSchema.parse(
        said
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l)),
      );
      const statement = z
        .object({
          predicateType: z.string(),
          subject: z.array(z.object({ digest: z.record(z.string(), z.string()) })),
        })
        .loose()
        .parse(JSON.parse(Buffer.from(first?.payload ?? '', 'base64').toString('utf8')));
      expect(statement.predicateType).toBe('https://spdx.dev/Document');
      expect(statement.subject[0]?.digest.sha256).toBe(imageDigest.slice('sha256:'.length));
    });

    it('the same commands refuse another image pushed under the release tag, and a chart re-pushed unsigned', async () => {
      const [imageCheck, chartCheck, sbomCheck] = documentedVerifyCommands() as [string, string, string];
      // Another image under the same tag (here the cluster's pause image): the tag now names
      // other bytes, which nobody signed.
      await run(
        k.info.cosign,
        ['copy', '--force', `${k.info.registry}/kourier/pause:1`, `${image}:${version}`],
        {
          env: signer.env,
        },
      );
      const moved = await tagDigest(k.info.registry, `${OWNER}/agentkourier`, version);
      expect(moved).not.toBe(imageDigest);
      await expect(verify(imageCheck, { digest: moved })).rejects.toThrow(/no signatures found|no matching/i);
      await expect(verify(sbomCheck, { digest: moved })).rejects.toThrow(
        /no matching attestations|none of the attestations|no signatures found/i,
      );
      // The same chart version packaged again (for another image) and pushed over the signed one.
      const repushed = await pushChart(k3, version, 'ghcr.io/someone-else/agentkourier', charts);
      expect(repushed).not.toBe(chartDigest);
      await expect(verify(chartCheck, { chartDigest: repushed })).rejects.toThrow(
        /no signatures found|no matching/i,
      );
      // What was signed still verifies: a digest names the same bytes after the tag moved.
      await verify(imageCheck);
      await verify(chartCheck);
    });

    it('Helm 4 installs the chart by its digest; the pod runs the image by its digest', async () => {
      await release.installHttp([`oci://${charts}/agentkourier@${chartDigest}`, '--plain-http'], node, [
        `image.repository=ghcr.io/${OWNER}/agentkourier`,
        `image.digest=${imageDigest}`,
        `watchNamespaces={${team}}`,
      ]);
      expect((await k.helmOk(['version', '--short'])).trim()).toMatch(/^v4\./);
      const pod = await k.readyPod(ns, release.selector);
      const [container] = pod.status.containerStatuses ?? [];
      expect(container?.imageID).toContain(imageDigest);
      const spec = await k.kubectlOk([
        '-n',
        ns,
        'get',
        'pod',
        pod.metadata.name,
        '-o',
        'jsonpath={.spec.containers[0].image}',
      ]);
      expect(spec).toBe(`ghcr.io/${OWNER}/agentkourier@${imageDigest}`);
      // The chart installed is the signed one, not what the tag names now.
      const chartImage = await k.helmOk(['get', 'values', release.name, '-n', ns, '--all', '-o', 'json']);
      expect(JSON.parse(chartImage).image.repository).toBe(`ghcr.io/${OWNER}/agentkourier`);
    });

    it("after the controller has written its resources' status, a Helm 4 upgrade applies server-side with no conflict; uninstall", async () => {
      await bindChannel(k, team, agent);
      await eventually(async () => {
        const ready = await k.kubectlOk([
          '-n',
          team,
          'get',
          'bindings.agentkourier.dev',
          'cluster-chat',
          '-o',
          'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
        ]);
        expect(ready).toBe('True');
      }, 60_000);
      const firstPod = (await k.readyPod(ns, release.selector)).metadata.name;
      const upgraded = await k.helm([
        'upgrade',
        release.name,
        `oci://${charts}/agentkourier@${chartDigest}`,
        '--plain-http',
        '-n',
        ns,
        '--reuse-values',
        '--set',
        'podAnnotations.agentkourier\\.dev/upgraded=yes',
      ]);
      expect(upgraded.code, upgraded.stderr).toBe(0);
      expect(upgraded.stderr).not.toMatch(/conflict/i);
      // Helm 4 applied server-side: the Deployment's spec is the field manager "helm"'s Apply.
      const deployment = z
        .object({
          metadata: z.object({
            managedFields: z.array(z.object({ manager: z.string(), operation: z.string() }).loose()),
          }),
        })
        .parse(
          JSON.parse(
            await k.kubectlOk([
              '-n',
              ns,
              'get',
              'deployment',
              release.fullname,
              '--show-managed-fields',
              '-o',
              'json',
            ]),
          ),
        );
      const managed = deployment.metadata.managedFields;
      expect(managed.filter((m) => m.operation === 'Apply').map((m) => m.manager)).toEqual(['helm']);
      const pod = await eventually(async () => {
        const ready = await k.readyPod(ns, release.selector, 5_000);
        if (ready.metadata.name === firstPod) throw new Error('still the first pod');
        return ready;
      }, 120_000);
      expect(pod.status.containerStatuses?.[0]?.imageID).toContain(imageDigest);
      const eventsUrl = await release.eventsUrl();
      await eventually(async () => {
        const res = await fetch(eventsUrl.replace(':8080/slack/events', ':9090/readyz'));
        expect(res.status).toBe(200);
      }, 30_000);
      const asked = await mention(node.slack, eventsUrl, 'Are you the signed build?');
      expect(await settledReply(node.slack, asked)).toBe(ANSWER);

      await k.helmOk(['uninstall', release.name, '-n', ns, '--wait']);
      await eventually(async () => {
        expect((await k.kubectlOk(['-n', ns, 'get', 'deployments,services', '-o', 'name'])).trim()).toBe('');
      }, 60_000);
    });
  },
);

/**
 * The chart job's packaging and push: scripts/package-chart.sh for this version and image, then
 * `helm push`, whose "Digest:" line the workflow signs. Returns that digest.
 */
async function pushChart(
  k: ClusterClient,
  version: string,
  forImage: string,
  charts: string,
): Promise<string> {
  const packaged = await k.shell(
    `HELM=${JSON.stringify(k.info.helm)} bash ${JSON.stringify(join(ROOT, 'scripts/package-chart.sh'))} ${version} ${forImage}`,
  );
  if (packaged.code !== 0) throw new Error(`package-chart.sh failed: ${packaged.stderr}`);
  const tgz = packaged.stdout.trim().split('\n').at(-1) ?? '';
  const pushed = await k.helm(['push', tgz, `oci://${charts}`, '--plain-http']);
  if (pushed.code !== 0) throw new Error(`helm push failed: ${pushed.stderr}`);
  const digest = /^Digest: (sha256:[0-9a-f]{64})$/m.exec(`${pushed.stdout}\n${pushed.stderr}`)?.[1];
  if (digest === undefined) throw new Error(`helm push reported no digest: ${pushed.stderr}`);
  return digest;
}
