import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { z } from 'zod';
import { LiveRegistry } from '../../src/core/registry.js';
import { Controller } from '../../src/k8s/controller.js';

/**
 * A controller in its own process, so a test can SIGKILL it: the real way a replica dies, with
 * no chance to release its Lease. Prints `leading` / `following` lines on stdout.
 *
 *   CONTROLLER_CHILD='{"kubeconfigPath":…,"identity":…,"leaseNamespace":…,"timings":{…}}'
 */

const config = z
  .object({
    kubeconfigPath: z.string(),
    identity: z.string(),
    leaseNamespace: z.string(),
    leaseName: z.string().optional(),
    timings: z.object({
      leaseDurationMs: z.number(),
      renewDeadlineMs: z.number(),
      retryPeriodMs: z.number(),
    }),
  })
  .parse(JSON.parse(process.env.CONTROLLER_CHILD ?? '{}'));

const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(config.kubeconfigPath);
const controller = new Controller({
  kubeConfig,
  registry: new LiveRegistry(),
  // Errors only: the tests provoke warnings on purpose (a throttled watch restarting), and a
  // passing run should read clean; an error still shows on the test's stderr.
  logger: pino({ level: 'error' }, process.stderr),
  identity: config.identity,
  leaseNamespace: config.leaseNamespace,
  ...(config.leaseName === undefined ? {} : { leaseName: config.leaseName }),
  timings: config.timings,
});
await controller.start();
let last: boolean | undefined;
setInterval(() => {
  if (controller.isLeader !== last) {
    last = controller.isLeader;
    process.stdout.write(`${last ? 'leading' : 'following'}\n`);
  }
}, 50);
process.on('SIGTERM', () => {
  void controller.stop().then(() => process.exit(0));
});
