/** The control plane's public face, for src/main.ts (`agentkourier controller`). */

export type { NamespaceChannels } from '../control/channels.js';
export { ControllerConfigError, type ControllerSettings, loadControllerSettings } from './config.js';
export {
  Controller,
  type ControllerOptions,
  ControllerStateError,
  type ControllerTimings,
  DEFAULT_CONTROLLER_TIMINGS,
} from './controller.js';
