// The worker protocol's loop (docs: /work/shared/WORKER-PROTOCOL.md's
// contract, version 1) for a Node adapter: JSON lines on stdin and stdout,
// one database connection, the definite and indefinite error codes, the
// suite's transactions and reconnects. An adapter (examples/pgboss,
// examples/graphile-worker) brings its library's own calls as handlers and
// its own copy of node-postgres (`pg`), so this file has no dependency of
// its own.
//
// Everything here follows from the contract:
//   - one pg.Client per process, opened at init with application_name in
//     its startup packet, then `SET search_path` and `SET statement_timeout`
//     sent as statements; never a pool, never a second client (a client-side
//     cancel would open one, so timeouts are the server's);
//   - a request marked may_wait runs under wait_timeout_ms, set before it
//     (SET LOCAL inside the suite's transaction) and set back after it;
//   - after a connection_lost every request but reconnect is answered
//     connection_lost: the worker never reconnects on its own;
//   - an error the server raised is definite (server_error with its
//     SQLSTATE), 57014 is a timeout, class 08 and 57P are the connection's;
//     an error without a SQLSTATE is indefinite unless it is plainly the
//     adapter's own bug (a TypeError, a failed assertion), which is the
//     protocol's failure with its stack.

import readline from 'node:readline';
import { AssertionError } from 'node:assert';

const PROTOCOL = 1;

// An outcome the contract names, raised by a handler or mapped from an error.
export class ProtocolError extends Error {
  constructor(code, text, sqlstate) {
    super(text);
    this.code = code;
    this.sqlstate = sqlstate;
  }
}

function log(...args) {
  process.stderr.write(args.join(' ') + '\n');
}

function quoteIdent(name) {
  return '"' + String(name).replace(/"/g, '""') + '"';
}

// The one connection. `client` is replaced on reconnect; handlers reach it
// only through conn.query, so a library given `conn.query` as its database
// follows the worker onto the new session.
class Connection {
  constructor(pg, init) {
    this.pg = pg;
    this.init = init;
    this.client = null;
    this.lost = true;
    this.inTx = false;
  }

  async open() {
    const { dsn, application_name: appName, schema, op_timeout_ms: opTimeout } = this.init;
    const client = new this.pg.Client({ connectionString: dsn, application_name: appName });
    // A socket that dies between requests emits 'error' on the client;
    // unheard it would end the process. The next request learns of it.
    client.on('error', err => {
      log('connection error:', err.message);
      if (this.client === client) this.lost = true;
    });
    client.on('end', () => {
      if (this.client === client) this.lost = true;
    });
    this.client = client;
    this.inTx = false;
    await client.connect();
    await client.query(`SET search_path TO ${quoteIdent(schema)}`);
    await client.query(`SET statement_timeout TO ${Number(opTimeout) | 0}`);
    this.lost = false;
  }

  async close() {
    const client = this.client;
    this.client = null;
    this.lost = true;
    if (!client) return;
    // end() waits for the server's goodbye, which a cut proxy never sends.
    await Promise.race([
      client.end().catch(() => {}),
      new Promise(resolve => setTimeout(resolve, 1000).unref())
    ]);
    client.connection?.stream?.destroy();
  }

  async query(text, values) {
    if (this.lost || !this.client) {
      throw new ProtocolError('connection_lost', 'the connection was lost earlier');
    }
    return this.client.query(text, values);
  }
}

// errorReply maps what a request threw to the contract's error reply, and
// marks the connection lost when the error says the session is gone.
function errorReply(err, conn, pg) {
  if (err instanceof ProtocolError) {
    if (err.code === 'connection_lost') conn.lost = true;
    return { code: err.code, text: err.message, sqlstate: err.sqlstate };
  }
  if (err instanceof pg.DatabaseError && typeof err.code === 'string') {
    const state = err.code;
    if (state === '57014') return { code: 'timeout', text: err.message, sqlstate: state };
    if (state.startsWith('08') || state.startsWith('57P')) {
      conn.lost = true;
      return { code: 'connection_lost', text: err.message, sqlstate: state };
    }
    return { code: 'server_error', text: err.message, sqlstate: state };
  }
  if (err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError ||
      err instanceof SyntaxError || err instanceof AssertionError) {
    return { code: 'protocol', text: String(err.stack || err) };
  }
  // No SQLSTATE and not the adapter's own bug: the socket, a closed
  // client, a query that never got its answer. Indefinite.
  conn.lost = true;
  return { code: 'connection_lost', text: String(err && err.message || err) };
}

// serve runs the loop until stdin closes.
//
// adapter: {
//   name,                      for the log
//   pg,                        the adapter's node-postgres module
//   features,                  the optional requests served, as init_ok lists them
//   fence,                     'counter', 'token' or 'none'
//   install(ctx),              the library's own migrations into ctx.init.schema
//   claim(ctx) -> rows,        each {id, event, gen|token, ...}
//   complete(ctx, row), retry(ctx, row), renew(ctx, row) -> applied (boolean)
//   rescue(ctx),
//   reconnected(ctx),          optional: the session changed under the library
// }
// ctx: { init, directives, query(text, values), inTx }
export async function serve(adapter) {
  const { pg } = adapter;
  let conn = null;
  let ctx = null;
  let lastId = 0;

  const out = obj => process.stdout.write(JSON.stringify(obj) + '\n');

  async function withTimeout(req, fn) {
    if (!req.may_wait) return fn();
    const wait = Number(ctx.init.wait_timeout_ms) | 0;
    const op = Number(ctx.init.op_timeout_ms) | 0;
    const scope = conn.inTx ? 'LOCAL ' : '';
    await conn.query(`SET ${scope}statement_timeout TO ${wait}`);
    let failed = false;
    try {
      return await fn();
    } catch (err) {
      failed = true;
      throw err;
    } finally {
      // Inside a transaction that the failure aborted, the setting goes
      // with the transaction; otherwise it is put back.
      if (!conn.lost && !(failed && conn.inTx)) {
        await conn.query(`SET ${scope}statement_timeout TO ${op}`);
      }
    }
  }

  const outcome = kind => async req => {
    if (!req.row || typeof req.row !== 'object') throw new ProtocolError('protocol', `${kind} without a row object`);
    const applied = await withTimeout(req, () => adapter[kind](ctx, req.row));
    return { type: 'ok', applied: !!applied };
  };

  const handlers = {
    async install() {
      if (!adapter.install) throw new ProtocolError('unsupported', 'install');
      await adapter.install(ctx);
      return { type: 'install_ok' };
    },
    async claim(req) {
      const rows = await withTimeout(req, () => adapter.claim(ctx));
      const batch = Number(ctx.directives.batch) || 1;
      if (rows.length > batch) {
        throw new ProtocolError('protocol', `the library returned ${rows.length} jobs for batch=${batch}`);
      }
      for (const row of rows) {
        if (!row.id) throw new ProtocolError('protocol', 'the library returned a job without an id');
      }
      return { type: 'claim_ok', rows };
    },
    complete: outcome('complete'),
    retry: outcome('retry'),
    renew: outcome('renew'),
    async rescue(req) {
      if (!adapter.rescue) throw new ProtocolError('unsupported', 'rescue');
      await withTimeout(req, () => adapter.rescue(ctx));
      return { type: 'ok' };
    },
    async begin(req) {
      await conn.query('BEGIN');
      conn.inTx = true;
      const fixture = req.fixture;
      if (fixture && fixture.sql) {
        await conn.query(fixture.sql, (fixture.args || []).map(String));
      }
      return { type: 'ok' };
    },
    async commit() {
      conn.inTx = false;
      const res = await conn.query('COMMIT');
      // The server answers COMMIT of an aborted transaction with ROLLBACK,
      // not an error; the contract makes it one.
      if (res.command === 'ROLLBACK') {
        throw new ProtocolError('server_error', 'current transaction is aborted, commit rolled back', '25P02');
      }
      return { type: 'ok' };
    },
    async rollback() {
      conn.inTx = false;
      await conn.query('ROLLBACK');
      return { type: 'ok' };
    },
    async reconnect() {
      await conn.close();
      try {
        await conn.open();
      } catch (err) {
        conn.lost = true;
        throw new ProtocolError('connection_lost', `reconnect: ${err.message}`);
      }
      if (adapter.reconnected) await adapter.reconnected(ctx);
      return { type: 'ok' };
    }
  };

  async function handle(req) {
    if (req.type === 'init') {
      if (req.protocol !== PROTOCOL) throw new ProtocolError('unsupported', `protocol ${req.protocol}`);
      ctx = {
        init: req,
        directives: req.directives || {},
        query: (text, values) => conn.query(text, values),
        get inTx() { return conn.inTx; }
      };
      conn = new Connection(pg, req);
      try {
        await conn.open();
      } catch (err) {
        // Answered as lost at the first request; the suite reconnects.
        log(`${adapter.name}: connect at init failed:`, err.message);
        conn.lost = true;
      }
      return { type: 'init_ok', features: adapter.features, fence: adapter.fence };
    }
    if (!ctx) throw new ProtocolError('protocol', `${req.type} before init`);
    const handler = Object.hasOwn(handlers, req.type) ? handlers[req.type] : null;
    if (!handler) throw new ProtocolError('unsupported', `request type ${req.type}`);
    if (req.type !== 'reconnect' && conn.lost) {
      throw new ProtocolError('connection_lost', 'the connection was lost earlier; waiting for reconnect');
    }
    return handler(req);
  }

  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let req;
    try {
      req = JSON.parse(line);
    } catch (err) {
      log(`${adapter.name}: a request that is not JSON:`, line);
      process.exit(2);
    }
    if (Number.isInteger(req.id) && req.id <= lastId) log(`${adapter.name}: request id ${req.id} does not increase`);
    lastId = req.id;
    let reply;
    try {
      reply = await handle(req);
    } catch (err) {
      const e = conn ? errorReply(err, conn, pg) : { code: 'protocol', text: String(err.stack || err) };
      if (e.code !== 'protocol') log(`${adapter.name}: ${req.type}: ${e.code}: ${e.text}`);
      else log(`${adapter.name}: ${req.type}: ${e.text}`);
      reply = { type: 'error', ...e };
      if (reply.sqlstate === undefined) delete reply.sqlstate;
    }
    out({ in_reply_to: req.id, ...reply });
  }
  if (conn) await conn.close();
  process.exit(0);
}
