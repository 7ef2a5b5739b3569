import { describe, expect, it } from 'vitest';
import { InvalidConfigError } from '../core/errors.js';
import { loadBrokerConfig } from './broker.js';

const defaults = { store: { kind: 'sqlite' as const, path: '.agentkourier/state.db' }, httpPort: 8080 };

describe('broker configuration', () => {
  it('uses the defaults when nothing is set', () => {
    expect(loadBrokerConfig({}, defaults)).toEqual({
      store: defaults.store,
      logLevel: 'info',
      logFormat: 'json',
      httpPort: 8080,
      replicaName: undefined,
      retentionDays: 90,
    });
  });

  it('reads a PostgreSQL store, a port, a level and the replica name', () => {
    const config = loadBrokerConfig(
      {
        AGENTKOURIER_STORE: 'postgres://u:secret@db/kourier',
        AGENTKOURIER_HTTP_PORT: '9000',
        LOG_LEVEL: 'debug',
        LOG_FORMAT: 'pretty',
        POD_NAME: 'ak-0',
        AGENTKOURIER_RETENTION_DAYS: '0',
      },
      defaults,
    );
    expect(config).toEqual({
      store: { kind: 'postgres', url: 'postgres://u:secret@db/kourier', schema: 'agentkourier' },
      logLevel: 'debug',
      logFormat: 'pretty',
      httpPort: 9000,
      replicaName: 'ak-0',
      retentionDays: 0,
    });
    expect(loadBrokerConfig({ AGENTKOURIER_STORE: 'sqlite:/var/lib/ak.db' }, defaults).store).toEqual({
      kind: 'sqlite',
      path: '/var/lib/ak.db',
    });
  });

  it('names the bad variable and never echoes its value', () => {
    expect(() => loadBrokerConfig({ AGENTKOURIER_STORE: 'mysql://u:hunter2@db' }, defaults)).toThrow(
      InvalidConfigError,
    );
    try {
      loadBrokerConfig({ AGENTKOURIER_STORE: 'mysql://u:hunter2@db' }, defaults);
    } catch (error) {
      expect((error as Error).message).toContain('AGENTKOURIER_STORE');
      expect((error as Error).message).not.toContain('hunter2');
    }
    expect(() => loadBrokerConfig({ AGENTKOURIER_HTTP_PORT: '99999' }, defaults)).toThrow(
      /AGENTKOURIER_HTTP_PORT/,
    );
    expect(() => loadBrokerConfig({ LOG_LEVEL: 'loud' }, defaults)).toThrow(/LOG_LEVEL/);
    for (const days of ['-1', '30d', '1.5', '40000'])
      expect(() => loadBrokerConfig({ AGENTKOURIER_RETENTION_DAYS: days }, defaults)).toThrow(
        /^AGENTKOURIER_RETENTION_DAYS must be .*\(0 keeps every thread\)$/,
      );
    expect(() => loadBrokerConfig({ LOG_FORMAT: 'xml' }, defaults)).toThrow(
      /^LOG_FORMAT must be json or pretty$/,
    );
    // Local mode asks for pretty lines unless LOG_FORMAT says otherwise.
    expect(loadBrokerConfig({}, { ...defaults, logFormat: 'pretty' }).logFormat).toBe('pretty');
    expect(loadBrokerConfig({ LOG_FORMAT: 'json' }, { ...defaults, logFormat: 'pretty' }).logFormat).toBe(
      'json',
    );
  });
});
