/**
 * A worker thread that compiles large templates for compile-pool.ts: lexing,
 * parsing and compiling a source at the size bound costs hundreds of
 * milliseconds, which on the main thread would stall every API request and
 * SMTP session. It answers each request with the template spec (JavaScript
 * source) or the compiler's error message. One request at a time: the pool
 * never sends another before the answer.
 *
 * Unlike the signing threads, these keep the process's priority: a request
 * waits on its compile, and the pool's timeout is wall-clock, so at a lower
 * priority a busy machine would push a valid template past it (422).
 */
import { parentPort } from 'node:worker_threads';
import { precompile, type TemplateField } from './handlebars-env';

export interface CompileRequest {
  field: TemplateField;
  source: string;
}

export type CompileAnswer = { spec: string } | { error: string };

parentPort?.on('message', ({ field, source }: CompileRequest) => {
  let answer: CompileAnswer;
  try {
    answer = { spec: precompile(field, source) };
  } catch (err) {
    answer = { error: String((err as Error)?.message ?? err) };
  }
  parentPort?.postMessage(answer);
});
