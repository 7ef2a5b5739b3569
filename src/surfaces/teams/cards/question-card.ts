import type { Question, StructuredForm } from '../../../core/question.js';
import { cutWithMark } from '../../../core/text.js';

/**
 * A question the agent paused on, as an Adaptive Card (1.5, Universal Actions): a tool approval
 * shows each call with its arguments and a choice to approve or deny it; an `ask_user` form
 * shows each question with its choices or a text box. One `Action.Execute` sends them
 * (Teams then invokes the app with `adaptiveCard/action`, the inputs merged into the action's
 * data). Once decided, the message is replaced by the decided card: what was decided, and by
 * whom, for everyone in the conversation. Everything the agent wrote is shown as plain text.
 */

export const CARD_CONTENT_TYPE = 'application/vnd.microsoft.card.adaptive';
export const VERB_DECIDE = 'agentkourier.decide';
export const VERB_STOP = 'agentkourier.stop';
export const CALL_INPUT = 'call';
export const ITEM_INPUT = 'item';
const ARGS_MAX = 2_000;
const TEXT_MAX = 3_000;

type Element = Record<string, unknown>;

export interface CardAttachment {
  contentType: string;
  content: Record<string, unknown>;
}

function card(body: Element[], actions: Element[] = []): CardAttachment {
  return {
    contentType: CARD_CONTENT_TYPE,
    content: {
      type: 'AdaptiveCard',
      $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
      version: '1.5',
      body,
      ...(actions.length === 0 ? {} : { actions }),
    },
  };
}

/**
 * Adaptive Cards read a little markdown in a TextBlock (emphasis, lists, links) and no escapes:
 * the agent's words keep their look, but a link it writes is not made one (its text could name
 * another place than it goes to).
 */
function plain(text: string, max = TEXT_MAX): string {
  return cutWithMark(text, max).replace(/\]\(/g, ']\u200b(');
}

const text = (value: string, extra: Element = {}): Element => ({
  type: 'TextBlock',
  text: value,
  wrap: true,
  ...extra,
});

/** The card asking `question` (a structured one), its action naming the question it answers. */
export function questionCard(question: Question): CardAttachment {
  const form = question.form as StructuredForm;
  const body: Element[] = [text(plain(question.text), { weight: 'Bolder' })];
  if (form.subagent !== undefined)
    body.push(text(`Asked by ${plain(form.subagent, 100)}`, { isSubtle: true }));
  if (form.kind === 'approval') {
    if (form.hint !== '') body.push(text(plain(form.hint)));
    form.calls.forEach((call, i) => {
      body.push(text(`Tool: ${plain(call.name, 100)}`, { weight: 'Bolder', separator: true }));
      body.push(text(plain(call.args, ARGS_MAX), { fontType: 'Monospace', isSubtle: true }));
      body.push({
        type: 'Input.ChoiceSet',
        id: `${CALL_INPUT}${i}`,
        style: 'expanded',
        value: 'approve',
        choices: [
          { title: 'Approve', value: 'approve' },
          { title: 'Deny', value: 'deny' },
        ],
      });
    });
  } else {
    form.items.forEach((item, i) => {
      body.push(text(plain(item.question), { separator: true }));
      body.push(
        item.choices.length === 0
          ? { type: 'Input.Text', id: `${ITEM_INPUT}${i}`, isMultiline: true, maxLength: 4_000 }
          : {
              type: 'Input.ChoiceSet',
              id: `${ITEM_INPUT}${i}`,
              isMultiSelect: item.multiple,
              style: item.multiple ? 'expanded' : 'compact',
              choices: item.choices.map((c) => ({ title: cutWithMark(c, 200), value: cutWithMark(c, 200) })),
            },
      );
    });
  }
  const title = form.kind === 'approval' ? 'Send decisions' : 'Send answers';
  return card(body, [{ type: 'Action.Execute', title, verb: VERB_DECIDE, data: { q: question.key } }]);
}

/** The card once decided: what each call got, or the answers, and who sent them. */
export function decidedCard(form: StructuredForm, lines: string[], by: string): CardAttachment {
  const head = form.kind === 'approval' ? `Decided by ${plain(by, 200)}` : `Answered by ${plain(by, 200)}`;
  return card([text(head, { weight: 'Bolder' }), ...lines.map((l) => text(plain(l)))]);
}

/** The question card again with a line for the one who pressed: why nothing was taken. */
export function refusalCard(question: Question | undefined, why: string): CardAttachment {
  const warning = text(why, { color: 'Attention', weight: 'Bolder' });
  if (question?.form === undefined) return card([warning]);
  const again = questionCard(question);
  (again.content.body as Element[]).unshift(warning);
  return again;
}

/** Under an answer being written in a channel or group chat: the Stop button. */
export function stopCard(turnId: string): CardAttachment {
  return card([], [{ type: 'Action.Execute', title: 'Stop', verb: VERB_STOP, data: { turn: turnId } }]);
}

/** What the one who pressed Stop sees in its place until the answer ends. */
export function stoppingCard(): CardAttachment {
  return card([text('Stopping the agent…', { isSubtle: true })]);
}
