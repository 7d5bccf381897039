/**
 * Many rows bound as one value on SQLite: the rows as one JSON array of
 * arrays, unpacked by SQLite (`SELECT j.value->>0, j.value->>1, … FROM
 * json_each(?) AS j`). The writer's multi-row inserts and counter upserts
 * (buffer.ts) and the MTA's outcome update (delivery/leave.ts) use it.
 *
 * Why: the sqlite3 driver binds each value on the main thread, and for every
 * value that is not a string it looks up the global `RegExp` and `Date`
 * constructors to test it against them. Under API load that binding was the
 * largest single cost on the main thread (a sixth of its busy time): a group
 * of 21 message rows of 30 columns took ~310 µs to bind, against ~75 µs to
 * serialise as JSON and bind one string, with SQLite's own time unchanged
 * (measured with the driver alone). One text for every row count is also one
 * prepared statement per column set instead of one per length.
 *
 * Only rows whose values JSON carries exactly take this path: strings,
 * booleans (1 and 0, as bound), null and safe integers. A fraction goes the
 * bound way: SQLite's text-to-double conversion is not correctly rounded, and
 * one double in ~20,000 came back a unit in the last place off. So does a
 * Buffer, undefined (the column's default), another object, a bigint and a
 * string with a lone surrogate (binding writes U+FFFD, JSON would write the
 * surrogate's bytes): the caller then binds the values one by one. One
 * difference is kept: the driver binds an integer beyond 32 bits as a float,
 * which a TEXT or untyped column would store as '2147483648.0'; JSON stores
 * the integer. The tables written this way keep numbers in INTEGER, NUMERIC
 * (knex's boolean) or REAL columns only, where the two are the same value
 * (test/db/buffer-insert.test.ts compares every affinity).
 *
 * The json_each table is named `j` and its columns qualified: a result column
 * named `key` or `true` would otherwise be what ORDER BY or WHERE refer to.
 */

/**
 * `tuples` as one JSON array of arrays for `json_each(?)`, or undefined when a value is not one JSON carries
 * exactly (see above): the caller then binds the values one by one.
 */
export function jsonTuples(tuples: ReadonlyArray<readonly unknown[]>): string | undefined {
  for (const tuple of tuples) for (const v of tuple) if (!carriesExactly(v)) return undefined;
  return JSON.stringify(tuples);
}

/**
 * `j.value->>0 AS "a", …`: the columns of a row of `json_each(?) AS j` over jsonTuples' array; those named in
 * `integers` CAST AS INTEGER (a statement that also has a bound form typing its numbers so).
 */
export function jsonColumns(names: readonly string[], integers: ReadonlySet<string> = new Set()): string {
  return names.map((name, i) => (integers.has(name) ? `CAST(j.value->>${i} AS INTEGER) AS "${name}"` : `j.value->>${i} AS "${name}"`)).join(', ');
}

/** String.prototype.isWellFormed (Node 20; not in TypeScript's ES2023 library): no lone surrogate. */
export const isWellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

function carriesExactly(v: unknown): boolean {
  switch (typeof v) {
    case 'string':
      // binding writes a lone surrogate as U+FFFD, JSON.stringify as its escape: not the same text
      return isWellFormed(v as string);
    case 'boolean':
      return true;
    case 'number':
      return Number.isSafeInteger(v);
    case 'object':
      return v === null;
    default:
      return false;
  }
}
