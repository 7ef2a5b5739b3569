import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs';

/**
 * A test OTLP/HTTP trace receiver on loopback: POST /v1/traces with `application/x-protobuf`
 * (decoded with protobufjs against the OTLP trace messages below) or `application/json`. It keeps
 * every span it was sent, ids as lowercase hex, and answers as a collector does.
 */

// The OTLP trace export request, with the fields these tests read (field numbers as in
// opentelemetry-proto's trace/v1/trace.proto; the others are skipped as unknown fields).
const OTLP_TRACE_PROTO = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
message InstrumentationScope { string name = 1; string version = 2; }
message Span {
  bytes trace_id = 1;
  bytes span_id = 2;
  string trace_state = 3;
  bytes parent_span_id = 4;
  string name = 5;
  int32 kind = 6;
  fixed64 start_time_unix_nano = 7;
  fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9;
  repeated Link links = 13;
  Status status = 15;
}
message Link { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; repeated KeyValue attributes = 4; }
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; }
}
`;

const ExportRequest = protobuf
  .parse(OTLP_TRACE_PROTO, { keepCase: false })
  .root.lookupType('otlp.ExportTraceServiceRequest');

export type AttributeValue = string | number | boolean;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  links: Array<{ traceId: string; spanId: string }>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  scope: string;
  resource: Record<string, AttributeValue>;
  /** How it arrived: 'protobuf' or 'json'. */
  encoding: 'protobuf' | 'json';
}

export interface OtlpReceiver {
  /** http://127.0.0.1:PORT (the OTEL_EXPORTER_OTLP_ENDPOINT). */
  url: string;
  spans: ReceivedSpan[];
  /** Content types of the requests, in order. */
  contentTypes: string[];
  close(): Promise<void>;
}

interface RawKeyValue {
  key: string;
  value?: { stringValue?: string; boolValue?: boolean; intValue?: unknown; doubleValue?: number };
}

function attributesOf(list: RawKeyValue[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of list ?? []) {
    const v = kv.value ?? {};
    if (v.stringValue !== undefined) out[kv.key] = v.stringValue;
    else if (v.boolValue !== undefined) out[kv.key] = v.boolValue;
    else if (v.intValue !== undefined) out[kv.key] = Number(v.intValue);
    else if (v.doubleValue !== undefined) out[kv.key] = v.doubleValue;
  }
  return out;
}

/** Ids: hex strings in OTLP/JSON, bytes in protobuf. */
type RawId = string | Uint8Array;

function hex(id: RawId | undefined): string {
  if (id === undefined) return '';
  return typeof id === 'string' ? id.toLowerCase() : Buffer.from(id).toString('hex');
}

interface RawSpan {
  traceId: RawId;
  spanId: RawId;
  parentSpanId?: RawId;
  name: string;
  kind?: number;
  attributes?: RawKeyValue[];
  links?: Array<{ traceId: RawId; spanId: RawId }>;
  status?: { code?: number };
}

interface RawRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: RawKeyValue[] };
    scopeSpans?: Array<{ scope?: { name?: string }; spans?: RawSpan[] }>;
  }>;
}

function spansOf(request: RawRequest, encoding: 'protobuf' | 'json'): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of request.resourceSpans ?? []) {
    const resource = attributesOf(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: hex(s.parentSpanId),
          name: s.name,
          kind: s.kind ?? 0,
          attributes: attributesOf(s.attributes),
          links: (s.links ?? []).map((l) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId) })),
          statusCode: s.status?.code ?? 0,
          scope: ss.scope?.name ?? '',
          resource,
          encoding,
        });
      }
    }
  }
  return out;
}

async function body(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const type = (req.headers['content-type'] ?? '').split(';')[0] ?? '';
      contentTypes.push(type);
      const bytes = await body(req);
      if (type === 'application/x-protobuf') {
        const decoded = ExportRequest.toObject(ExportRequest.decode(bytes), {
          longs: String,
          enums: Number,
        }) as RawRequest;
        spans.push(...spansOf(decoded, 'protobuf'));
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } else if (type === 'application/json') {
        spans.push(...spansOf(JSON.parse(bytes.toString('utf8')) as RawRequest, 'json'));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        res.writeHead(415).end();
      }
    })().catch(() => res.writeHead(400).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
