import MarkdownIt from "markdown-it";

/**
 * renderMarkdown turns a template's docs (the agentbox.navix.sh/docs annotation) into HTML for
 * the console. Raw HTML in the source is escaped, not passed through, and markdown-it refuses
 * javascript:, vbscript: and data: links (but images), so docs written by one team cannot run
 * script in another's console.
 */
export function renderMarkdown(source: string): string {
  return new MarkdownIt({ html: false, linkify: true, typographer: false }).render(source);
}
