import { describe, expect, it } from 'vitest';
import {
  type MdElement,
  type MdNode,
  markdownTree,
  safeHref,
  textOf,
} from '../../../src/surfaces/webchat/page/markdown.js';

/** Every element of the tree, depth first. */
function elements(nodes: readonly MdNode[]): MdElement[] {
  return nodes.flatMap((n) => (typeof n === 'string' ? [] : [n, ...elements(n.children)]));
}

function tags(source: string): string[] {
  return elements(markdownTree(source)).map((e) => e.tag);
}

function text(source: string): string {
  return markdownTree(source).map(textOf).join('');
}

describe("the web chat's Markdown (markdown.ts)", () => {
  it('renders emphasis, code, lists, headings and line breaks as elements', () => {
    expect(tags('## Title\n\n**bold** _em_ ~~gone~~ `code`')).toEqual([
      'h2',
      'p',
      'strong',
      'em',
      's',
      'code',
    ]);
    expect(tags('- a\n- b\n\n3. c')).toEqual(['ul', 'li', 'li', 'ol', 'li']);
    const ol = elements(markdownTree('3. c\n4. d')).find((e) => e.tag === 'ol');
    expect(ol?.attrs.start).toBe('3');
    // A single newline is a line break, as in a chat.
    expect(tags('one\ntwo')).toEqual(['p', 'br']);
  });

  it('keeps a code block as text, in a pre, with its language as a label', () => {
    const [pre] = markdownTree('```ts\nconst a = "<b>";\n```');
    expect(pre).toEqual({
      tag: 'pre',
      attrs: { lang: 'ts' },
      children: [{ tag: 'code', attrs: {}, children: ['const a = "<b>";'] }],
    });
  });

  it('puts a table in a box of its own (it scrolls there, not the page), with its alignment', () => {
    const tree = markdownTree('| a | b |\n| --- | ---: |\n| 1 | 2 |');
    expect(tree[0]).toMatchObject({ tag: 'div', attrs: { className: 'table-wrap' } });
    const cells = elements(tree).filter((e) => e.tag === 'td');
    expect(cells.map((c) => [textOf(c), c.attrs.className])).toEqual([
      ['1', undefined],
      ['2', 'align-right'],
    ]);
  });

  it("shows an agent's HTML as text: no element comes of it", () => {
    const source = '<script>alert(1)</script>\n\n<img src=x onerror="alert(2)"> <b>b</b>\n\n<div>x</div>';
    expect(tags(source)).toEqual(['p', 'p', 'p']);
    expect(text(source)).toBe('<script>alert(1)</script><img src=x onerror="alert(2)"> <b>b</b><div>x</div>');
  });

  it('makes only absolute http, https and mailto addresses links; the rest stay as written', () => {
    for (const bad of [
      '[x](javascript:alert(1))',
      '[x](JAVASCRIPT:alert(1))',
      '[x](data:text/html,hi)',
      '[x](vbscript:msgbox)',
      '[x](/api/threads)',
      '[x](file:///etc/passwd)',
      '<javascript:alert(1)>',
    ]) {
      expect(tags(bad), bad).not.toContain('a');
      expect(text(bad), bad).toBe(bad);
    }
    expect(safeHref(' https://example.com/a b')).toBe('https://example.com/a%20b');
    expect(safeHref('mailto:ops@example.com')).toBe('mailto:ops@example.com');
    expect(safeHref('javascript:alert(1)')).toBeUndefined();
  });

  it('shows the real target after a link whose text is not its address', () => {
    const [p] = markdownTree('[docs](https://example.com/docs) and <https://example.com/x>');
    expect(p).toEqual({
      tag: 'p',
      attrs: {},
      children: [
        { tag: 'a', attrs: { href: 'https://example.com/docs' }, children: ['docs'] },
        { tag: 'span', attrs: { className: 'link-target' }, children: [' (https://example.com/docs)'] },
        ' and ',
        { tag: 'a', attrs: { href: 'https://example.com/x' }, children: ['https://example.com/x'] },
      ],
    });
    // A link that names another address than its own shows the real one.
    const [q] = markdownTree('[https://bank.example](https://evil.example/login)');
    expect(q === undefined ? '' : textOf(q)).toBe('https://bank.example (https://evil.example/login)');
  });

  it('links bare addresses only when they have a scheme (a file name stays text)', () => {
    expect(tags('see https://example.com/a')).toEqual(['p', 'a']);
    expect(tags('edit main.py and notes.md')).toEqual(['p']);
  });

  it('shows an image as a link to it, never loading it', () => {
    const [p] = markdownTree('![graph](https://example.com/g.png) ![x](javascript:alert(1))');
    expect(elements(p === undefined ? [] : [p]).map((e) => e.tag)).toEqual(['p', 'a', 'span']);
    expect(p === undefined ? '' : textOf(p)).toBe(
      '🖼 graph (https://example.com/g.png) ![x](javascript:alert(1))',
    );
  });
});
