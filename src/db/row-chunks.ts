/**
 * A table's kept rows (buffer.ts) cut into statement-sized chunks, each of
 * rows with the same columns.
 */

/** Bound variables per statement: far under SQLite's 32,766 and PostgreSQL's 65,535. */
export const MAX_VARIABLES = 8000;
/**
 * Rows per insert statement at most: knex writes SQLite's multi-row insert as one compound SELECT
 * (`select … union all select …`), which SQLite caps at 500 terms (SQLITE_MAX_COMPOUND_SELECT).
 */
const MAX_ROWS = 500;

/** The rows in statement-sized chunks, each of rows with the same columns. */
export function* chunksOf(rows: readonly object[]): Generator<[string[], Array<Record<string, unknown>>]> {
  const byShape = new Map<string, object[]>();
  let last: { keys: string[]; list: object[] } | undefined;
  for (const row of rows) {
    const keys = Object.keys(row);
    // Rows of one table mostly come from one code path, keys in one order: comparing them with the last row's
    // costs less than joining ~30 names into a key per row.
    if (last && sameKeys(keys, last.keys)) {
      last.list.push(row);
      continue;
    }
    const shape = keys.join(',');
    let list = byShape.get(shape);
    if (!list) byShape.set(shape, (list = []));
    list.push(row);
    last = { keys, list };
  }
  for (const [shape, list] of byShape) {
    const columns = shape.split(',');
    const perStatement = Math.min(MAX_ROWS, Math.max(1, Math.floor(MAX_VARIABLES / Math.max(1, columns.length))));
    for (let i = 0; i < list.length; i += perStatement) yield [columns, list.slice(i, i + perStatement) as Array<Record<string, unknown>>];
  }
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
