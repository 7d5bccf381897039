// A table's kept rows are cut into statements by their columns: rows whose keys come in another order, or are
// other keys, go in a statement of their own whatever order they arrive in, and no statement binds more than
// MAX_VARIABLES values.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chunksOf, MAX_VARIABLES } from '../../src/db/row-chunks';

describe('row chunks', () => {
  it('groups rows by their exact columns, in order of first appearance, each row once', () => {
    const rows = [
      { a: 1, b: 2 },
      { a: 3, b: 4 },
      { b: 5, a: 6 }, // same keys, another order: another statement
      { a: 7, b: 8 }, // back to the first shape after a different one
      { a: 12, b: 13 }, // and the same again: into that shape's list, not the last one's
      { a: 9 },
      { b: 10, a: 11 },
    ];
    const chunks = [...chunksOf(rows)];
    assert.deepEqual(chunks.map(([columns]) => columns.join(',')), ['a,b', 'b,a', 'a']);
    assert.deepEqual(chunks.map(([, chunk]) => chunk), [[rows[0], rows[1], rows[3], rows[4]], [rows[2], rows[6]], [rows[5]]]);
    for (const [columns, chunk] of chunks) for (const row of chunk) assert.deepEqual(Object.keys(row), columns);
  });

  it('cuts a long list so a statement binds at most MAX_VARIABLES values', () => {
    const columns = Array.from({ length: 30 }, (_, i) => `c${i}`);
    const rows = Array.from({ length: 700 }, (_, n) => Object.fromEntries(columns.map((c) => [c, n])));
    const chunks = [...chunksOf(rows)];
    const perStatement = Math.floor(MAX_VARIABLES / columns.length);
    assert.deepEqual(chunks.map(([, chunk]) => chunk.length), [perStatement, perStatement, 700 - 2 * perStatement]);
    assert.deepEqual(chunks.flatMap(([, chunk]) => chunk), rows);
  });
});
