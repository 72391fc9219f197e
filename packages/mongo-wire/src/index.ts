export { MongoWireServer, type MongoWireServerOptions } from './mongo-wire-server.js';
export { startMongoWire, type MongoWireHandle } from './start-mongo-wire.js';
