// graphile-worker's own code as an outboxlab worker (the worker protocol,
// version 1).
//
// Library: graphile-worker 0.18.0 from npm (package.json pins it;
// package-lock.json pins its dependencies). It declares node >= 22.18 and
// runs on Node 20 with npm's engine warning.
//
// What it calls:
//   install  runMigrations({ pgPool, preset }) (public): graphile-worker's own
//            installer, its migrations 000001-000020 into the run's schema;
//            then getTaskDetails (internal, dist/taskIdentifiers.js), which a
//            worker pool runs before its first fetch to register its task
//            identifiers ('outbox' here). Run at install, not at the first
//            claim: a claim inside the suite's transaction could roll the
//            task row back while the library caches its id.
//   claim    batchGetJobs (internal, dist/sql/getJobs.js): the fetch every
//            worker pool runs (LocalQueue and the pool's own getJob call it).
//   complete batchCompleteJobs (internal, dist/sql/completeJobs.js): what the
//            pool runs when a task resolves.
//   retry    batchFailJobs (internal, dist/sql/failJobs.js): what the pool
//            runs when a task throws.
//   rescue   resetLockedAt (internal, dist/sql/resetLockedAt.js): the lock
//            reset the pool runs every 8-10 minutes (unlocks jobs locked
//            more than 4 hours ago).
// graphile-worker 0.17 dropped the SQL functions older versions exported
// (get_job, complete_job, fail_job); the worker pool now sends these
// statements from TypeScript, and its public API has no call that fetches,
// completes or fails one job outside a running pool. The four functions
// above are that pool's own, imported by path (the package's `exports`
// names only dist/index.js), with the arguments the pool passes: its
// compiled options, a withPgClient, the pool id, the jobs. A job object is
// rebuilt from the row the claim returned ({ id, job_queue_id }), which is
// all batchCompleteJobs and batchFailJobs read.
//
// `applied`: batchCompleteJobs and batchFailJobs return nothing; the adapter
// reads the row counts of the statements they send (the withPgClient it
// hands them records each result). There is no renew: graphile-worker has
// no heartbeat, so the feature is not offered.
//
// The pool id: the worker's name (w1, w2, ...), so that a process started
// after a kill has its predecessor's id, as a restarted pool does not (a
// pool's id is random); the contract asks for identities derived from the
// name.
//
// The single connection: graphile-worker takes a `pgPool` option; here it is
// a pool of one, a facade whose connect() hands out the protocol's one
// pg.Client (../nodeworker/protocol.mjs: application_name in the startup
// packet, then SET search_path and SET statement_timeout) and whose
// release() keeps it. The internal functions take a withPgClient, which
// runs its callback on that client. The schema option is the run's schema.
// withPgClient.withRetries runs its callback once: the library's own loop
// retries 40001, 40P01 and connection errors for minutes with sleeps of up
// to 120 s, beyond what the contract allows a worker (stop within
// op_timeout_ms); the error goes to the suite instead, as its code.
// preparedStatements is off, what graphile-worker asks of its users behind
// PgBouncer in transaction mode (a topology the suite runs); the statements'
// text is the same.
//
// Timers: none run. No worker pool is started, so there is no poll, no
// cron, no lock-reset interval (the rescue request is the lock reset).
//
// Backoff and lease: graphile-worker's lease is fixed, 4 hours
// (resetLockedAt), and so is its backoff, exp(min(attempts, 10)) seconds
// after the attempt that failed (batchFailJobs). Neither is configurable,
// and a first attempt's backoff, e^1 = 2.7 s, would end on its own within a
// check. So the protocol file's enqueue writes each job as one with 6 of 8
// attempts spent: the first claim is attempt 7, whose failure waits e^7 s,
// about 18 minutes; attempt 8 is the last (max_attempts=2 in the suite's
// count). The claim's generation is attempts - 6.

import pg from 'pg';
import EventEmitter from 'node:events';
import { Logger, runMigrations } from 'graphile-worker';
import { processSharedOptions } from './node_modules/graphile-worker/dist/lib.js';
import { getTaskDetails } from './node_modules/graphile-worker/dist/taskIdentifiers.js';
import { batchGetJobs } from './node_modules/graphile-worker/dist/sql/getJobs.js';
import { batchCompleteJobs } from './node_modules/graphile-worker/dist/sql/completeJobs.js';
import { batchFailJobs } from './node_modules/graphile-worker/dist/sql/failJobs.js';
import { resetLockedAt } from './node_modules/graphile-worker/dist/sql/resetLockedAt.js';
import { serve } from '../nodeworker/protocol.mjs';

const TASK = 'outbox';
// Attempts the protocol file's enqueue marks spent (see the header).
const SPENT = 6;

// graphile-worker's default logger writes to stdout, the protocol's channel.
const logger = new Logger(scope => (level, message) => {
  process.stderr.write(`graphile-worker ${level}: ${message}\n`);
});

// tasks: the task list a pool would run; only its keys are read here.
const tasks = { [TASK]: async () => {} };

let compiled = null;

function options(ctx) {
  if (compiled) return compiled;
  const client = { query: (q, values) => query(ctx, q, values), release() {} };
  const pool = new EventEmitter();
  pool.options = { max: 1 };
  pool.connect = async () => client;
  // graphile-worker warns about a pool without these listeners.
  pool.on('error', () => {});
  pool.on('connect', () => {});
  compiled = processSharedOptions({
    pgPool: pool,
    preset: {
      worker: {
        schema: ctx.init.schema,
        logger,
        preparedStatements: false,
        maxPoolSize: 1,
        concurrentJobs: 1
      }
    }
  });
  return compiled;
}

// query sends one of the library's queries ({ text, values, name } or a
// text) on the protocol's connection.
function query(ctx, q, values) {
  if (typeof q === 'string') return ctx.query(q, values);
  return ctx.query(q.text, q.values);
}

// recorder is a withPgClient that runs its callback on the connection and
// keeps every result the callback's queries return.
function recorder(ctx) {
  const results = [];
  const client = {
    async query(q, values) {
      const res = await query(ctx, q, values);
      results.push(res);
      return res;
    },
    release() {}
  };
  const withPgClient = async callback => callback(client);
  withPgClient.withRetries = withPgClient;
  withPgClient.rowCount = () => results.reduce((n, res) => n + (res.rowCount || 0), 0);
  return withPgClient;
}

// taskDetails is graphile-worker's task lookup, cached by the library per
// compiled options. A lookup that failed (a lost connection) stays cached
// as a rejected promise, so the options are compiled afresh after one.
async function taskDetails(ctx) {
  try {
    return await getTaskDetails(options(ctx), recorder(ctx), tasks);
  } catch (err) {
    compiled = null;
    throw err;
  }
}

function dbJob(row) {
  return { id: row.id, job_queue_id: row.job_queue_id ?? null };
}

await serve({
  name: 'graphile-worker',
  pg,
  features: ['install', 'rescue', 'tx'],
  fence: 'counter',

  async install(ctx) {
    await runMigrations({
      pgPool: options(ctx)._rawOptions.pgPool,
      preset: { worker: { schema: ctx.init.schema, logger, preparedStatements: false } }
    });
    await taskDetails(ctx);
  },

  async claim(ctx) {
    const opts = options(ctx);
    const details = await taskDetails(ctx);
    if (details.taskIds.length === 0) throw new Error(`task ${TASK} is not registered`);
    const batch = Number(ctx.directives.batch) || 1;
    const jobs = await batchGetJobs(opts, recorder(ctx), tasks, ctx.init.worker, null, batch);
    return jobs.map(job => ({
      id: String(job.id),
      event: job.payload && job.payload.event_id,
      gen: job.attempts - SPENT,
      job_queue_id: job.job_queue_id
    }));
  },

  async complete(ctx, row) {
    const w = recorder(ctx);
    await batchCompleteJobs(options(ctx), w, ctx.init.worker, [dbJob(row)]);
    return w.rowCount() > 0;
  },

  async retry(ctx, row) {
    const w = recorder(ctx);
    await batchFailJobs(options(ctx), w, ctx.init.worker, [
      { job: dbJob(row), message: 'outboxlab retry', replacementPayload: undefined }
    ]);
    return w.rowCount() > 0;
  },

  async rescue(ctx) {
    await resetLockedAt(options(ctx), recorder(ctx));
  }
});
