// pg-boss's own code as an outboxlab worker (the worker protocol, version 1).
//
// Library: pg-boss 12.38.1 from npm (package.json pins it; package-lock.json
// pins its dependencies). It declares node >= 22.12 and runs on Node 20 with
// npm's engine warning.
//
// Two forms, one script:
//   node worker.mjs             the fenced form: complete/fail/touch are given
//                               the job objects fetch() returned ({ id,
//                               retryCount }), and pg-boss (since 12.35.0)
//                               matches id and retry_count in the statement;
//   node worker.mjs --unfenced  the unfenced form: the same calls given plain
//                               ids, which pg-boss still accepts and does not
//                               fence (the only form before 12.35.0, and the
//                               one testdata/libraries/pg-boss.sql transcribes
//                               from 12.27.0).
//
// What it calls (all public API of the PgBoss class):
//   install  new PgBoss({ migrate: true, schema }).start(): pg-boss's own
//            installer and migrations, into the run's schema; then
//            createQueue('outbox', ...) and stop({ close: false }).
//   claim    fetch('outbox', { batchSize }): its fetchNextJob statement.
//   complete complete('outbox', job | id); retry: fail('outbox', job | id);
//            renew: touch('outbox', job | id). `applied` is the call's
//            `affected` count.
//   rescue   supervise('outbox'): the supervisor pass, whose monitor step
//            runs failJobsByTimeout and failJobsByHeartbeat (expiry).
//
// The claim interval. A supervise pass runs expiry only for queues whose
// monitor stamp (queue.monitor_claim_on, else monitor_on) is at least
// monitorIntervalSeconds old (plans.trySetQueueMonitorTime), and stamps
// them: a second supervise within the interval expires nothing. The suite's
// clock does not move between two rescues (fixtures move the jobs' own
// timestamps, not the queue's), so each rescue first clears the queue's two
// stamps (one UPDATE of pg-boss's queue row, the only write outside its
// API) and so stands for the supervisor's next pass, whenever the interval
// lets it run. monitorIntervalSeconds stays at its default (60 s).
//
// The single connection: pg-boss takes a `db` option, an object with
// executeSql(text, values); given one it opens no pool of its own
// (PgBoss.getDb). Here it is the protocol's one pg.Client
// (../nodeworker/protocol.mjs), opened at init with application_name in the
// startup packet, then SET search_path and SET statement_timeout. pg-boss
// qualifies every table with its `schema` option, set to the run's schema.
// useListenNotify is off (its LISTEN would open a second client).
//
// Timers: supervise: false (no supervisor or flow-resolver timer),
// schedule: false (no cron timekeeper), registerInstance: false (no instance
// heartbeat), migrate: false outside install (no BAM poller; the install
// process stops its instance, and with it the poller, before it replies),
// reindex: false (no REINDEX in a rescue), queueCacheIntervalSeconds at its
// maximum, 24 hours (the queue-cache refresh is the one timer pg-boss always
// arms; it never fires within a run). The in-memory wip timer runs no SQL.
//
// Expiry and backoff, configured long on the queue: expireInSeconds 900
// (pg-boss's default), heartbeatSeconds 120 (so touch() is a real
// heartbeat: the lease is 2 minutes), retryDelay 600, retryLimit 1 (two
// attempts, as in the transcription, so counterexamples stay short). The
// protocol file's expire, age and due sections move started_on,
// heartbeat_on and start_after; nothing ends on its own within a check.

import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { serve } from '../nodeworker/protocol.mjs';

const QUEUE = 'outbox';
const unfenced = process.argv.includes('--unfenced');

// The queue's settings, the library's own createQueue options.
const queueOptions = {
  retryLimit: 1,
  retryDelay: 600,
  expireInSeconds: 900,
  heartbeatSeconds: 120
};

function bossConfig(ctx, migrate) {
  return {
    db: { executeSql: (text, values) => ctx.query(text, values) },
    schema: ctx.init.schema,
    migrate,
    supervise: false,
    schedule: false,
    registerInstance: false,
    useListenNotify: false,
    reindex: false,
    queueCacheIntervalSeconds: 24 * 60 * 60
  };
}

function newBoss(ctx, migrate) {
  const boss = new PgBoss(bossConfig(ctx, migrate));
  // An unheard 'error' event would end the process.
  boss.on('error', err => process.stderr.write(`pg-boss: ${err && err.stack || err}\n`));
  boss.on('warning', w => process.stderr.write(`pg-boss warning: ${w && w.message}\n`));
  return boss;
}

let boss = null;

// started opens pg-boss on first use, not at init: the install process's
// init comes before the schema exists. A start that fails (a lost
// connection) is tried again at the next request.
async function started(ctx) {
  if (!boss) boss = newBoss(ctx, false);
  await boss.start();
  return boss;
}

// The argument pg-boss's settle calls take: the job object in the fenced
// form, its id alone in the unfenced form.
function jobArg(row) {
  return unfenced ? row.id : { id: row.id, retryCount: row.retryCount };
}

await serve({
  name: unfenced ? 'pg-boss (ids)' : 'pg-boss (jobs)',
  pg,
  features: ['install', 'renew', 'rescue', 'tx'],
  // pg-boss's own attempt number: fetch raises retry_count on every fetch
  // after the first, so retry_count + 1 goes up by one on every claim.
  fence: 'counter',

  async install(ctx) {
    const installer = newBoss(ctx, true);
    await installer.start();
    await installer.createQueue(QUEUE, queueOptions);
    await installer.stop({ close: false, graceful: false });
  },

  async claim(ctx) {
    const b = await started(ctx);
    const jobs = await b.fetch(QUEUE, { batchSize: Number(ctx.directives.batch) || 1 });
    return jobs.map(job => ({
      id: job.id,
      event: job.data && job.data.event_id,
      gen: job.retryCount + 1,
      retryCount: job.retryCount
    }));
  },

  async complete(ctx, row) {
    const b = await started(ctx);
    return (await b.complete(QUEUE, jobArg(row))).affected > 0;
  },

  async retry(ctx, row) {
    const b = await started(ctx);
    return (await b.fail(QUEUE, jobArg(row))).affected > 0;
  },

  async renew(ctx, row) {
    const b = await started(ctx);
    return (await b.touch(QUEUE, jobArg(row))).affected > 0;
  },

  async rescue(ctx) {
    const b = await started(ctx);
    await ctx.query('UPDATE queue SET monitor_claim_on = NULL, monitor_on = NULL WHERE name = $1', [QUEUE]);
    await b.supervise(QUEUE);
  }
});
