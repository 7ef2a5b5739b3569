import { randomUUID } from 'node:crypto';
import { validateView } from '../block-kit.js';
import { clone, SlackRefusal, str } from '../values.js';
import type { Handler, Workspace } from '../workspace.js';

/** views.open: Block Kit modals. */
export function viewMethods(ws: Workspace): Record<string, Handler> {
  return {
    // views.open (addition): Block Kit's modal surface, docs.slack.dev/reference/methods/views.open and
    // docs.slack.dev/surfaces/modals (title 24, submit/close 24, callback_id 255, private_metadata 3000
    // characters, 100 blocks; a modal with input blocks needs `submit`). The trigger_id is not checked
    // against a press (tests craft presses), only required.
    'views.open': (args) => {
      const triggerId = str(args, 'trigger_id');
      if (!triggerId)
        throw new SlackRefusal('invalid_arguments', ['[ERROR] missing required field: trigger_id']);
      let view = args.view;
      if (typeof view === 'string') {
        try {
          view = JSON.parse(view) as unknown;
        } catch {
          throw new SlackRefusal('invalid_arguments', ['[ERROR] view must be JSON']);
        }
      }
      const checked = validateView(view);
      const id = `V${randomUUID().replace(/-/g, '').slice(0, 10).toUpperCase()}`;
      ws.views.push({ id, triggerId, view: clone(checked) });
      return { view: { id, ...clone(checked), state: { values: {} } } };
    },
  };
}
