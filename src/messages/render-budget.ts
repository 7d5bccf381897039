/**
 * The work one send may make its templates do, counted while Handlebars
 * renders (render.ts routes every piece of output, every path look-up, every
 * helper call and every {{#each}} turn through here). Checking the finished
 * string would be too late: `{{a}}` 300 times over a 1 MB value builds 300 MB
 * before any check could run, and a loop of 20,000 turns around 320 empty
 * `{{#if}}` blocks produced no output at all while it held the event loop for
 * 10 s.
 *
 * Bounds: each render of one field may produce limits.maxMessageBytes
 * characters (a field longer than that cannot fit a message: UTF-8 and MIME
 * encoding only add bytes) and run MAX_ITERATIONS loop turns; all renders of
 * a send together (every field of every recipient copy) MAX_SEND_FACTOR times
 * that, matching the size check of the built copies in prepare.ts. The work
 * of all renders of a send is at most MAX_WORK_PER_SEND steps, and they must
 * finish within RENDER_DEADLINE_MS of wall-clock time.
 */

/** All copies of one send together, relative to one message (per-recipient copies multiply). */
export const MAX_SEND_FACTOR = 5;
/** {{#each}} turns per field render: nested loops multiply (3 levels over 150 items is 3.4 million). */
export const MAX_ITERATIONS = 20_000;
/**
 * Steps of work per send: each program (the template, each block body, once
 * per loop turn) is charged the path look-ups (`x`, `a.b`, `../c`) and helper
 * calls (`if`, `each`, `lookup`, …, sub-expressions included) it holds, and
 * each loop turn one more. A step costs 0.15 to 0.5 µs depending on the
 * machine, so this is 40 to 125 ms of CPU. A 200-row invoice table of 20
 * fields, in html and text, is 8,400 steps a copy: 29 per-recipient copies fit.
 */
export const MAX_WORK_PER_SEND = 250_000;
/**
 * Wall-clock bound on all renders of one send, for the work the step count
 * does not see: turning a huge array into text, escaping megabytes. The step
 * budget is what keeps templates cheap; this is a backstop, and generous
 * because wall-clock time also grows with the machine's load (at 250 ms a
 * ten-copy invoice send failed on a busy two-core machine).
 */
export const RENDER_DEADLINE_MS = 1000;
/** How many steps go by between two looks at the clock. */
const CLOCK_EVERY = 1024;

/** Thrown from inside a render; render.ts turns it into the API error naming the field. */
export class BudgetExceeded extends Error {
  constructor(
    readonly kind: 'output' | 'iterations' | 'work',
    message: string,
  ) {
    super(message);
  }
}

export interface WorkLimits {
  maxWork: number;
  deadlineMs: number;
}
export const SEND_WORK_LIMITS: WorkLimits = { maxWork: MAX_WORK_PER_SEND, deadlineMs: RENDER_DEADLINE_MS };
/** For the trial run after compiling (empty data, and the time is the compiler's, bounded before it ran). */
export const UNLIMITED_WORK: WorkLimits = { maxWork: Infinity, deadlineMs: Infinity };

export class RenderBudget {
  private fieldChars = 0;
  private fieldIterations = 0;
  private sendChars = 0;
  private sendIterations = 0;
  private sendWork = 0;
  private nextClockLook = CLOCK_EVERY;
  private readonly deadline: number;
  private readonly maxWork: number;
  private readonly deadlineMs: number;

  /** The deadline runs from here: make one budget per send, just before its first render. */
  constructor(
    readonly maxFieldChars: number,
    limits: WorkLimits = SEND_WORK_LIMITS,
  ) {
    this.maxWork = limits.maxWork;
    this.deadlineMs = limits.deadlineMs;
    this.deadline = performance.now() + limits.deadlineMs;
  }

  /** Called before each field render: the per-field counts restart, the send totals go on. */
  startField(): void {
    this.fieldChars = 0;
    this.fieldIterations = 0;
    this.checkClock();
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

  /** `count` steps of work: the look-ups and helper calls of a program about to run. */
  readonly steps = (count: number): void => {
    this.sendWork += count;
    if (this.sendWork > this.maxWork) {
      throw new BudgetExceeded('work', `too expensive to render: all copies of this send together may take at most ${this.maxWork} steps (look-ups, helper calls and loop turns)`);
    }
    if (this.sendWork >= this.nextClockLook) {
      this.nextClockLook = this.sendWork + CLOCK_EVERY;
      this.checkClock();
    }
  };

  /** One {{#each}} turn: counted against the loop bounds, and one step of work. */
  readonly iteration = (): void => {
    if (++this.fieldIterations > MAX_ITERATIONS) {
      throw new BudgetExceeded('iterations', `{{#each}} may run at most ${MAX_ITERATIONS} times per render`);
    }
    if (++this.sendIterations > MAX_ITERATIONS * MAX_SEND_FACTOR) {
      throw new BudgetExceeded('iterations', `{{#each}} may run at most ${MAX_ITERATIONS * MAX_SEND_FACTOR} times per send`);
    }
    this.steps(1);
  };

  private checkClock(): void {
    if (performance.now() > this.deadline) {
      throw new BudgetExceeded('work', `too expensive to render: all copies of this send together must render within ${this.deadlineMs} ms`);
    }
  }
}
