import { type FakeMessage, SLACK_LIMITS } from './api.js';
import { chars, clone, isRecord, problem, SlackRefusal } from './values.js';

/**
 * Block Kit as Slack checks it: blocks of messages (types, text lengths, ids, element limits),
 * the cumulative text limit, modal views for views.open, message metadata and stream chunks.
 * Each check throws the refusal Slack answers, with its `[ERROR] … [json-pointer:…]` message.
 */

const KNOWN_BLOCK_TYPES = new Set([
  'actions',
  'alert',
  'call',
  'card',
  'carousel',
  'container',
  'context',
  'context_actions',
  'data_table',
  'divider',
  'file',
  'header',
  'image',
  'input',
  'markdown',
  'plan',
  'rich_text',
  'section',
  'table',
  'task_card',
  'video',
]);
const TASK_STATUSES = new Set(['pending', 'in_progress', 'complete', 'error']);

function checkTextObject(obj: unknown, pointer: string, max: number, plainOnly: boolean): void {
  if (!isRecord(obj)) throw problem('invalid_blocks', 'must be an object', pointer);
  const type = obj.type;
  if (type !== 'plain_text' && (plainOnly || type !== 'mrkdwn')) {
    throw problem(
      'invalid_blocks',
      `must be one of ${plainOnly ? '[plain_text]' : '[plain_text, mrkdwn]'}`,
      `${pointer}/type`,
    );
  }
  if (typeof obj.text !== 'string' || obj.text.length === 0) {
    throw problem('invalid_blocks', 'must be more than 0 characters', `${pointer}/text`);
  }
  if (chars(obj.text) > max) {
    throw problem('invalid_blocks', `must be less than ${max + 1} characters`, `${pointer}/text`);
  }
}

function checkElement(el: unknown, pointer: string, actionIds: Set<string>): void {
  if (!isRecord(el) || typeof el.type !== 'string') {
    throw problem('invalid_blocks', 'must provide an object with a type', pointer);
  }
  if (el.action_id !== undefined) {
    if (typeof el.action_id !== 'string' || chars(el.action_id) > SLACK_LIMITS.actionIdChars) {
      throw problem('invalid_blocks', 'must be less than 256 characters', `${pointer}/action_id`);
    }
    if (actionIds.has(el.action_id)) {
      throw problem('invalid_blocks', `duplicate action_id: ${el.action_id}`, `${pointer}/action_id`);
    }
    actionIds.add(el.action_id);
  }
  if (el.type === 'button') {
    checkTextObject(el.text, `${pointer}/text`, SLACK_LIMITS.buttonTextChars, true);
    if (
      el.value !== undefined &&
      (typeof el.value !== 'string' || chars(el.value) > SLACK_LIMITS.buttonValueChars)
    ) {
      throw problem('invalid_blocks', 'must be less than 2001 characters', `${pointer}/value`);
    }
    if (el.url !== undefined && (typeof el.url !== 'string' || chars(el.url) > SLACK_LIMITS.buttonUrlChars)) {
      throw problem('invalid_blocks', 'must be less than 3001 characters', `${pointer}/url`);
    }
    if (el.style !== undefined && el.style !== 'primary' && el.style !== 'danger') {
      throw problem('invalid_blocks', 'must be one of [primary, danger]', `${pointer}/style`);
    }
  }
}

/** feedback_buttons (positive and negative, each text ≤ 75, value ≤ 2,000) or icon_button. */
function checkContextAction(el: unknown, pointer: string, actionIds: Set<string>): void {
  checkElement(el, pointer, actionIds);
  const e = el as Record<string, unknown>;
  if (e.type === 'icon_button') return;
  if (e.type !== 'feedback_buttons') {
    throw problem('invalid_blocks', 'must be one of [feedback_buttons, icon_button]', `${pointer}/type`);
  }
  for (const side of ['positive_button', 'negative_button']) {
    const button = e[side];
    if (!isRecord(button)) throw problem('invalid_blocks', `missing required field: ${side}`, pointer);
    checkTextObject(button.text, `${pointer}/${side}/text`, SLACK_LIMITS.buttonTextChars, true);
    if (typeof button.value !== 'string' || chars(button.value) > SLACK_LIMITS.buttonValueChars) {
      throw problem('invalid_blocks', 'must be less than 2001 characters', `${pointer}/${side}/value`);
    }
    if (
      button.accessibility_label !== undefined &&
      (typeof button.accessibility_label !== 'string' || chars(button.accessibility_label) > 75)
    ) {
      throw problem(
        'invalid_blocks',
        'must be less than 76 characters',
        `${pointer}/${side}/accessibility_label`,
      );
    }
  }
}

function checkBlock(block: unknown, pointer: string, blockIds: Set<string>): void {
  if (!isRecord(block) || typeof block.type !== 'string') {
    throw problem('invalid_blocks', 'missing required field: type', pointer);
  }
  if (!KNOWN_BLOCK_TYPES.has(block.type)) {
    throw problem('invalid_blocks', `unsupported type: ${block.type}`, `${pointer}/type`);
  }
  if (block.block_id !== undefined) {
    if (typeof block.block_id !== 'string' || chars(block.block_id) > SLACK_LIMITS.blockIdChars) {
      throw problem('invalid_blocks', 'must be less than 256 characters', `${pointer}/block_id`);
    }
    if (blockIds.has(block.block_id)) {
      throw problem('invalid_blocks', `duplicate block_id: ${block.block_id}`, `${pointer}/block_id`);
    }
    blockIds.add(block.block_id);
  }
  const actionIds = new Set<string>();
  switch (block.type) {
    case 'section': {
      if (block.text === undefined && block.fields === undefined) {
        throw problem('invalid_blocks', 'must provide either text or fields', pointer);
      }
      if (block.text !== undefined)
        checkTextObject(block.text, `${pointer}/text`, SLACK_LIMITS.sectionTextChars, false);
      if (block.fields !== undefined) {
        if (!Array.isArray(block.fields) || block.fields.length > SLACK_LIMITS.sectionFields) {
          throw problem('invalid_blocks', 'no more than 10 items allowed', `${pointer}/fields`);
        }
        block.fields.forEach((f, i) => {
          checkTextObject(f, `${pointer}/fields/${i}`, SLACK_LIMITS.sectionFieldChars, false);
        });
      }
      if (block.accessory !== undefined) checkElement(block.accessory, `${pointer}/accessory`, actionIds);
      break;
    }
    case 'header':
      checkTextObject(block.text, `${pointer}/text`, SLACK_LIMITS.headerTextChars, true);
      break;
    case 'markdown':
      if (typeof block.text !== 'string' || block.text.length === 0) {
        throw problem('invalid_blocks', 'must be more than 0 characters', `${pointer}/text`);
      }
      if (chars(block.text) > SLACK_LIMITS.markdownBlockChars) {
        throw problem('invalid_blocks', 'must be less than 12001 characters', `${pointer}/text`);
      }
      break;
    case 'context':
      if (!Array.isArray(block.elements) || block.elements.length === 0) {
        throw problem('invalid_blocks', 'must provide at least 1 item', `${pointer}/elements`);
      }
      if (block.elements.length > SLACK_LIMITS.contextElements) {
        throw problem('invalid_blocks', 'no more than 10 items allowed', `${pointer}/elements`);
      }
      break;
    case 'actions':
      if (!Array.isArray(block.elements) || block.elements.length === 0) {
        throw problem('invalid_blocks', 'must provide at least 1 item', `${pointer}/elements`);
      }
      if (block.elements.length > SLACK_LIMITS.actionsElements) {
        throw problem('invalid_blocks', 'no more than 25 items allowed', `${pointer}/elements`);
      }
      block.elements.forEach((el, i) => {
        // feedback_buttons may only appear inside context_actions.
        if (isRecord(el) && el.type === 'feedback_buttons')
          throw problem(
            'invalid_blocks',
            'unsupported type: feedback_buttons',
            `${pointer}/elements/${i}/type`,
          );
        checkElement(el, `${pointer}/elements/${i}`, actionIds);
      });
      break;
    case 'context_actions':
      // docs.slack.dev context actions block: 1 to 5 feedback_buttons or icon_button elements.
      if (!Array.isArray(block.elements) || block.elements.length === 0) {
        throw problem('invalid_blocks', 'must provide at least 1 item', `${pointer}/elements`);
      }
      if (block.elements.length > 5) {
        throw problem('invalid_blocks', 'no more than 5 items allowed', `${pointer}/elements`);
      }
      block.elements.forEach((el, i) => {
        checkContextAction(el, `${pointer}/elements/${i}`, actionIds);
      });
      break;
    case 'rich_text':
      if (!Array.isArray(block.elements)) {
        throw problem('invalid_blocks', 'missing required field: elements', pointer);
      }
      break;
    default:
      break;
  }
}

/** Sum of every string `text` property in the blocks (what the cumulative limit counts). */
function blocksTextLength(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + blocksTextLength(v), 0);
  if (!isRecord(value)) return 0;
  let n = 0;
  for (const [k, v] of Object.entries(value)) {
    if (k === 'text' && typeof v === 'string') n += chars(v);
    else n += blocksTextLength(v);
  }
  return n;
}

export function validateBlocks(blocks: unknown, tooManyCode: string, totalLimit: number): unknown[] {
  if (!Array.isArray(blocks)) throw new SlackRefusal('invalid_blocks_format');
  if (blocks.length > SLACK_LIMITS.blocksPerMessage) {
    throw problem(tooManyCode, 'no more than 50 items allowed', '/blocks');
  }
  const ids = new Set<string>();
  blocks.forEach((b, i) => {
    checkBlock(b, `/blocks/${i}`, ids);
  });
  if (blocksTextLength(blocks) > totalLimit) throw new SlackRefusal('msg_blocks_too_long');
  return blocks;
}

/** A modal view for views.open (addition): its own limits, then its blocks as in messages. */
export function validateView(view: unknown): Record<string, unknown> {
  if (!isRecord(view)) throw new SlackRefusal('invalid_arguments', ['[ERROR] missing required field: view']);
  if (view.type !== 'modal') throw problem('invalid_arguments', 'must be one of [modal]', '/view/type');
  checkTextObject(view.title, '/view/title', 24, true);
  if (view.submit !== undefined) checkTextObject(view.submit, '/view/submit', 24, true);
  if (view.close !== undefined) checkTextObject(view.close, '/view/close', 24, true);
  if (
    view.callback_id !== undefined &&
    (typeof view.callback_id !== 'string' || chars(view.callback_id) > 255)
  )
    throw problem('invalid_arguments', 'must be less than 256 characters', '/view/callback_id');
  if (
    view.private_metadata !== undefined &&
    (typeof view.private_metadata !== 'string' || chars(view.private_metadata) > 3_000)
  )
    throw problem('invalid_arguments', 'must be less than 3001 characters', '/view/private_metadata');
  if (!Array.isArray(view.blocks) || view.blocks.length === 0 || view.blocks.length > 100)
    throw problem('invalid_arguments', 'must provide 1 to 100 blocks', '/view/blocks');
  const ids = new Set<string>();
  let inputs = 0;
  view.blocks.forEach((b, i) => {
    const pointer = `/view/blocks/${i}`;
    if (isRecord(b) && b.type === 'input') {
      inputs++;
      if (b.block_id !== undefined) {
        if (typeof b.block_id !== 'string' || ids.has(b.block_id))
          throw problem('invalid_arguments', 'duplicate block_id', `${pointer}/block_id`);
        ids.add(b.block_id);
      }
      checkTextObject(b.label, `${pointer}/label`, 2_000, true);
      const el = b.element;
      if (!isRecord(el) || typeof el.type !== 'string')
        throw problem('invalid_arguments', 'missing required field: element', `${pointer}/element`);
      if (el.type === 'static_select' || el.type === 'multi_static_select') {
        if (!Array.isArray(el.options) || el.options.length === 0 || el.options.length > 100)
          throw problem('invalid_arguments', 'must provide 1 to 100 options', `${pointer}/element/options`);
        el.options.forEach((o, j) => {
          if (!isRecord(o))
            throw problem('invalid_arguments', 'must be an object', `${pointer}/element/options/${j}`);
          checkTextObject(o.text, `${pointer}/element/options/${j}/text`, 75, true);
          if (typeof o.value !== 'string' || o.value === '' || chars(o.value) > 150)
            throw problem(
              'invalid_arguments',
              'must be 1 to 150 characters',
              `${pointer}/element/options/${j}/value`,
            );
        });
      } else if (el.type === 'plain_text_input') {
        if (el.max_length !== undefined && (typeof el.max_length !== 'number' || el.max_length > 3_000))
          throw problem('invalid_arguments', 'must be at most 3000', `${pointer}/element/max_length`);
      }
      return;
    }
    checkBlock(b, pointer, ids);
  });
  if (inputs > 0 && view.submit === undefined)
    throw problem('invalid_arguments', 'a view with input blocks needs submit', '/view/submit');
  return view;
}

export function validateMetadata(metadata: unknown): FakeMessage['metadata'] | null {
  if (!isRecord(metadata)) throw new SlackRefusal('invalid_metadata_format');
  if (Object.keys(metadata).length === 0) return null; // `{}` removes metadata on chat.update
  if (typeof metadata.event_type !== 'string' || metadata.event_type.length === 0) {
    throw new SlackRefusal('invalid_metadata_schema', ['[ERROR] missing required field: event_type']);
  }
  if (!isRecord(metadata.event_payload)) {
    throw new SlackRefusal('invalid_metadata_schema', ['[ERROR] missing required field: event_payload']);
  }
  return { event_type: metadata.event_type, event_payload: clone(metadata.event_payload) };
}

/** Validates stream chunks; returns the markdown text they add and the other chunks. */
export function readChunks(chunks: unknown, totalLimit: number): { text: string; other: unknown[] } {
  if (!Array.isArray(chunks)) throw new SlackRefusal('invalid_chunks');
  let text = '';
  const other: unknown[] = [];
  chunks.forEach((c, i) => {
    const ptr = `/chunks/${i}`;
    if (!isRecord(c) || typeof c.type !== 'string')
      throw problem('invalid_chunks', 'missing required field: type', ptr);
    switch (c.type) {
      case 'markdown_text':
        if (typeof c.text !== 'string') throw problem('invalid_chunks', 'missing required field: text', ptr);
        if (chars(c.text) > SLACK_LIMITS.markdownTextChars) {
          throw problem('invalid_chunks', 'must be less than 12001 characters', `${ptr}/text`);
        }
        text += c.text;
        break;
      case 'task_update':
        if (typeof c.id !== 'string' || typeof c.title !== 'string') {
          throw problem('invalid_chunks', 'missing required field: id, title', ptr);
        }
        if (typeof c.status !== 'string' || !TASK_STATUSES.has(c.status)) {
          throw problem(
            'invalid_chunks',
            'must be one of [pending, in_progress, complete, error]',
            `${ptr}/status`,
          );
        }
        other.push(clone(c));
        break;
      case 'plan_update':
        if (typeof c.title !== 'string')
          throw problem('invalid_chunks', 'missing required field: title', ptr);
        other.push(clone(c));
        break;
      case 'blocks':
        validateBlocks(c.blocks, 'msg_blocks_too_many', totalLimit);
        other.push(clone(c));
        break;
      default:
        throw problem('invalid_chunks', `unsupported type: ${c.type}`, `${ptr}/type`);
    }
  });
  return { text, other };
}
