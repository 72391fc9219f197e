/**
 * Starts a MongoDB wire-protocol test server and prints its URL on stdout (one line), for
 * multi-process tests and developers:
 *   node --import tsx packages/mongo-wire/src/bin.ts --port 27017 [--host 127.0.0.1]
 * Runs until SIGINT/SIGTERM.
 */
import { parseArgs } from 'node:util';
import { MONGO_WIRE_DEFAULTS } from './mongo-wire-server.js';
import { startMongoWire } from './start-mongo-wire.js';

const { values } = parseArgs({
  options: { port: { type: 'string', default: String(MONGO_WIRE_DEFAULTS.port) }, host: { type: 'string', default: MONGO_WIRE_DEFAULTS.host } },
  strict: true,
});
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`mongo-wire: --port must be an integer 0-65535, got '${values.port}'\n`);
  process.exit(2);
}
const handle = await startMongoWire({ port, host: values.host });
process.stdout.write(`${handle.url}\n`);
const shutdown = (): void => {
  void handle.stop().then(() => process.exit(0));
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
