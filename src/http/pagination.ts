/**
 * Cursor pagination shared by every list: `?limit=1..100 (20)&cursor=<last id>`,
 * newest first. Ids sort by creation, so `id < cursor` keeps pages stable while
 * rows are inserted: nothing is seen twice and nothing that existed is skipped.
 */
import { z } from 'zod';

export const paginationQuery = {
  limit: z.coerce.number({ error: 'limit must be an integer from 1 to 100' }).int('limit must be an integer from 1 to 100')
    .min(1, 'limit must be at least 1').max(100, 'limit must be at most 100').default(20)
    .describe('Items per page, 1 to 100 (default 20).'),
  cursor: z.string().max(200).regex(/^[A-Za-z0-9_.@+-]+$/, 'cursor is not a value this API returned').optional()
    .describe('The `pagination.next_cursor` of the previous page.'),
};

export interface Page<T> {
  data: T[];
  pagination: { has_more: boolean; next_cursor: string | null; total: number };
}

/** `rows` must hold up to limit+1 items, fetched newest first. */
export function toPage<R, T>(rows: R[], limit: number, total: number, cursorOf: (r: R) => string, shape: (r: R) => T): Page<T> {
  const hasMore = rows.length > limit;
  const items = hasMore ? rows.slice(0, limit) : rows;
  return {
    data: items.map(shape),
    pagination: { has_more: hasMore, next_cursor: hasMore ? cursorOf(items[items.length - 1]) : null, total },
  };
}

export function pageSchema<T extends z.ZodType>(item: T) {
  return z.object({
    data: z.array(item),
    pagination: z.object({
      has_more: z.boolean(),
      next_cursor: z.string().nullable(),
      total: z.number().int(),
    }),
  });
}
