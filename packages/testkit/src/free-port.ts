import { createServer, type AddressInfo } from 'node:net';

/**
 * A TCP port that was free on 127.0.0.1 a moment ago (the OS picks it; another process may take
 * it before the caller binds, which on loopback in a test run is rare enough to accept).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      // A server listening on a TCP address always reports an AddressInfo.
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}
