/**
 * The work one send may make its templates do, counted while Handlebars
 * renders (render.ts routes every piece of output and every {{#each}} turn
 * through here). Checking the finished string would be too late: `{{a}}`
 * 300 times over a 1 MB value builds 300 MB before any check could run.
 *
 * Bounds: each render of one field may produce limits.maxMessageBytes
 * characters (a field longer than that cannot fit a message: UTF-8 and MIME
 * encoding only add bytes) and run MAX_ITERATIONS loop turns; all renders of
 * a send together (every field of every recipient copy) MAX_SEND_FACTOR times
 * that, matching the size check of the built copies in prepare.ts.
 */

/** All copies of one send together, relative to one message (per-recipient copies multiply). */
export const MAX_SEND_FACTOR = 5;
/** {{#each}} turns per field render: nested loops multiply (3 levels over 150 items is 3.4 million). */
export const MAX_ITERATIONS = 20_000;

/** Thrown from inside a render; render.ts turns it into the API error naming the field. */
export class BudgetExceeded extends Error {
  constructor(
    readonly kind: 'output' | 'iterations',
    message: string,
  ) {
    super(message);
  }
}

export class RenderBudget {
  private fieldChars = 0;
  private fieldIterations = 0;
  private sendChars = 0;
  private sendIterations = 0;

  constructor(readonly maxFieldChars: number) {}

  /** Called before each field render: the per-field counts restart, the send totals go on. */
  startField(): void {
    this.fieldChars = 0;
    this.fieldIterations = 0;
  }

  /** Counts one piece of output as Handlebars would append it (null and undefined append nothing). */
  readonly output = (value: unknown): string => {
    const text = value == null ? '' : String(value);
    this.fieldChars += text.length;
    this.sendChars += text.length;
    if (this.fieldChars > this.maxFieldChars) {
      throw new BudgetExceeded('output', `renders to more than ${this.maxFieldChars} characters, the message size limit`);
    }
    if (this.sendChars > this.maxFieldChars * MAX_SEND_FACTOR) {
      throw new BudgetExceeded('output', `renders, over all copies of this send, to more than ${this.maxFieldChars * MAX_SEND_FACTOR} characters; send fewer recipients per request`);
    }
    return text;
  };

  readonly iteration = (): void => {
    if (++this.fieldIterations > MAX_ITERATIONS) {
      throw new BudgetExceeded('iterations', `{{#each}} may run at most ${MAX_ITERATIONS} times per render`);
    }
    if (++this.sendIterations > MAX_ITERATIONS * MAX_SEND_FACTOR) {
      throw new BudgetExceeded('iterations', `{{#each}} may run at most ${MAX_ITERATIONS * MAX_SEND_FACTOR} times per send`);
    }
  };
}
