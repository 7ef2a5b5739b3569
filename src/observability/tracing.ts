import { context, propagation, type Tracer, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { z } from 'zod';
import { InvalidConfigError } from '../core/errors.js';
import { OtlpJsonTraceExporter } from './otlp-json.js';

/**
 * OpenTelemetry traces, wired only when the standard OTEL_* variables ask for them: an SDK
 * tracer provider with a batching OTLP/HTTP exporter (protobuf or JSON), the W3C propagator and
 * an AsyncLocalStorage context manager, all registered globally so any instrumented library
 * joins the same traces. Without them the code's `@opentelemetry/api` calls reach the API's
 * no-op tracer, whose cost the bench measures.
 *
 * Variables read (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/):
 * OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER (otlp | none), OTEL_EXPORTER_OTLP_ENDPOINT and
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL (http/protobuf,
 * http/json), OTEL_EXPORTER_OTLP[_TRACES]_HEADERS, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
 * OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG. Errors name the variable, never its value
 * (headers carry credentials).
 */

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface TracingConfig {
  /** The full URL spans are POSTed to (…/v1/traces). */
  url: string;
  protocol: OtlpProtocol;
  headers: Record<string, string>;
  serviceName: string;
  resourceAttributes: Record<string, string>;
  sampler: Sampler;
}

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

const url = z
  .string()
  .url('must be a URL')
  .refine((u) => /^https?:\/\//i.test(u), 'must be an http or https URL');
const protocol = z
  .string()
  .refine((p) => p !== 'grpc', 'grpc is not supported: use http/protobuf or http/json')
  .pipe(z.enum(['http/protobuf', 'http/json'], 'must be http/protobuf or http/json'));
const keyValues = z
  .string()
  .refine((v) => parseKeyValues(v) !== undefined, 'must be a list of key=value pairs separated by commas');

const schema = z.object({
  OTEL_SDK_DISABLED: z.enum(['true', 'false', 'TRUE', 'FALSE', '']).optional(),
  OTEL_TRACES_EXPORTER: z.enum(['otlp', 'none', ''], 'must be otlp or none').optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: url.optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url.optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol.optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol.optional(),
  OTEL_EXPORTER_OTLP_HEADERS: keyValues.optional(),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: keyValues.optional(),
  OTEL_SERVICE_NAME: z.string().min(1).max(255).optional(),
  OTEL_RESOURCE_ATTRIBUTES: keyValues.optional(),
  OTEL_TRACES_SAMPLER: z.enum(SAMPLERS, `must be one of ${SAMPLERS.join(', ')}`).optional(),
  OTEL_TRACES_SAMPLER_ARG: z
    .string()
    .regex(/^(0(\.\d+)?|1(\.0+)?)$/, 'must be a number from 0 to 1')
    .transform(Number)
    .optional(),
});

/** `k=v,k2=v2` with percent-encoded values (the W3C Baggage-like format the spec names). */
function parseKeyValues(value: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const item of value.split(',')) {
    if (item.trim() === '') continue;
    const eq = item.indexOf('=');
    if (eq <= 0) return undefined;
    const key = item.slice(0, eq).trim();
    try {
      out[key] = decodeURIComponent(item.slice(eq + 1).trim());
    } catch {
      return undefined;
    }
  }
  return out;
}

function samplerOf(name: (typeof SAMPLERS)[number] | undefined, ratio: number | undefined): Sampler {
  const r = ratio ?? 1;
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(r);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(r) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** The tracing settings of the environment; undefined when tracing is not asked for. */
export function tracingConfig(env: Readonly<Record<string, string | undefined>>): TracingConfig | undefined {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InvalidConfigError(`${issue?.path.join('.') ?? 'OTEL_*'} ${issue?.message ?? 'is invalid'}`);
  }
  const e = parsed.data;
  if (e.OTEL_SDK_DISABLED?.toLowerCase() === 'true' || e.OTEL_TRACES_EXPORTER === 'none') return undefined;
  const endpoint =
    e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (e.OTEL_EXPORTER_OTLP_ENDPOINT === undefined
      ? undefined
      : `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`);
  if (endpoint === undefined) return undefined;
  const resource = parseKeyValues(e.OTEL_RESOURCE_ATTRIBUTES ?? '') ?? {};
  return {
    url: endpoint,
    protocol: e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? e.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    headers: {
      ...parseKeyValues(e.OTEL_EXPORTER_OTLP_HEADERS ?? ''),
      ...parseKeyValues(e.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? ''),
    },
    serviceName: e.OTEL_SERVICE_NAME ?? resource['service.name'] ?? 'agentkourier',
    resourceAttributes: resource,
    sampler: samplerOf(e.OTEL_TRACES_SAMPLER, e.OTEL_TRACES_SAMPLER_ARG),
  };
}

export interface Tracing {
  /** Whether an SDK records and exports spans (false: the API's no-op). */
  readonly enabled: boolean;
  /** Where spans go, for the start line (no headers). */
  readonly describe: string;
  tracer(name: string): Tracer;
  /** Exports every ended span now (tests, and before stopping). */
  forceFlush(): Promise<void>;
  /** Exports what is left, then unregisters the globals. */
  shutdown(): Promise<void>;
}

const disabled: Tracing = {
  enabled: false,
  describe: 'off (no OTEL_EXPORTER_OTLP_ENDPOINT)',
  tracer: (name) => trace.getTracer(name),
  forceFlush: async () => undefined,
  shutdown: async () => undefined,
};

export interface TracingOptions {
  env: Readonly<Record<string, string | undefined>>;
  version: string;
  /** How long the batch waits before exporting (default 1 s; OTel's own default is 5 s). */
  scheduledDelayMs?: number;
}

/** Starts the SDK when the environment asks for tracing; otherwise the no-op API. */
export function startTracing(options: TracingOptions): Tracing {
  const config = tracingConfig(options.env);
  if (config === undefined) return disabled;
  const exporterOptions = { url: config.url, headers: config.headers };
  const exporter =
    config.protocol === 'http/json'
      ? new OtlpJsonTraceExporter(exporterOptions)
      : new OTLPTraceExporter(exporterOptions);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      ...config.resourceAttributes,
      [ATTR_SERVICE_NAME]: config.serviceName,
      [ATTR_SERVICE_VERSION]: options.version,
    }),
    sampler: config.sampler,
    spanProcessors: [
      new BatchSpanProcessor({ exporter, scheduledDelayMillis: options.scheduledDelayMs ?? 1_000 }),
    ],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  let stopped = false;
  return {
    enabled: true,
    describe: `${config.protocol} to ${new URL(config.url).origin}`,
    tracer: (name) => provider.getTracer(name, options.version),
    forceFlush: () => provider.forceFlush(),
    shutdown: async () => {
      if (stopped) return;
      stopped = true;
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        context.disable();
        propagation.disable();
      }
    },
  };
}
