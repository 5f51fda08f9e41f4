import type { CommandContext } from './context.js';

/**
 * A listing's text in the format asked for: the table (`-o wide`: with its wide columns) ending
 * with the next page's command line, or `-o name`: one identifier a line and nothing else on
 * stdout (the next page's command line goes to stderr, an empty page prints nothing).
 */
export interface Listing {
  /** What -o name prints, one a line. */
  ids: string[];
  table: (wide: boolean) => string;
  /** The text of an empty table. */
  empty: string;
  /** The next page's command line. */
  more: string | undefined;
  label?: string;
}

export function listingText (ctx: CommandContext, listing: Listing): string {
  if (ctx.output.format === 'name') {
    if (listing.more) ctx.log(`more: ${listing.more}`);
    return listing.ids.join('\n');
  }
  if (listing.ids.length === 0) return listing.empty;
  return `${listing.table(ctx.output.format === 'wide')}${listing.more ? `\n${listing.label ?? 'more'}: ${listing.more}` : ''}`;
}
