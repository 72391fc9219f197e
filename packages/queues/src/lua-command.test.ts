import { ValidationError } from '@tickfleet/core';
import { startRedis, type TestRedis } from '@tickfleet/testkit';
import { luaCommand } from './lua-command.js';
import { createRedisConnection, type RedisClient } from './redis-connection.js';

const COMMANDS = new URL('./commands/', import.meta.url);

describe('luaCommand', () => {
  let redis: TestRedis;
  let client: RedisClient;

  beforeAll(async () => {
    redis = await startRedis();
    client = createRedisConnection(redis.url, { blocking: false });
  });

  afterAll(async () => {
    client.disconnect();
    await redis.stop();
  });

  it('runs a script from the commands folder with its keys and arguments, on a second client too', async () => {
    const key = `${redis.namespace()}:lock`;
    const acquire = luaCommand(client, COMMANDS, 'acquireLock-1.lua');
    expect(await acquire([key], ['a', 60_000])).toBe(1);
    expect(await acquire([key], ['b', 60_000])).toBe(0);
    const other = createRedisConnection(redis.url, { blocking: false });
    try {
      expect(await luaCommand(other, COMMANDS, 'acquireLock-1.lua')([key], ['a', 60_000])).toBe(1);
    } finally {
      other.disconnect();
    }
  });

  it('refuses a file not named <name>-<numKeys>.lua, naming it', () => {
    expect(() => luaCommand(client, COMMANDS, 'acquireLock.lua')).toThrow(ValidationError);
    expect(() => luaCommand(client, COMMANDS, 'acquireLock.lua')).toThrow(
      /Lua command file: expected a name <verb><Noun>-<numKeys>\.lua, got "acquireLock\.lua"/,
    );
  });

  it('refuses a call with another number of keys than the file name declares', () => {
    const acquire = luaCommand(client, COMMANDS, 'acquireLock-1.lua');
    expect(() => acquire(['k1', 'k2'], ['a', 1000])).toThrow(ValidationError);
    expect(() => acquire(['k1', 'k2'], ['a', 1000])).toThrow(/keys of acquireLock-1\.lua: expected 1 keys/);
  });
});
