import { stringify } from 'yaml';

/**
 * The configuration files of the test cluster's node, as pure functions of its layout (no I/O):
 * containerd, the CNI network, the kubelet, kube-proxy, CoreDNS and the image registry.
 * docs/reference/real-cluster.md says why each setting is what it is on these machines.
 */

export interface NodeLayout {
  /** Where everything of the cluster lives (state, sockets, logs); removed by its reset. */
  base: string;
  nodeName: string;
  /** The node's own address: the API server advertises it, pods reach test peers on it. */
  nodeIp: string;
  /** 127.0.0.1:port of the local OCI registry. */
  registry: string;
  /** The pod sandbox image, in that registry. */
  sandboxImage: string;
  /** Registries whose pulls containerd sends to the local one instead (the chart's default ghcr.io). */
  mirrored: string[];
  cniBinDir: string;
  /** The registry's blobs: outside `base`, so pushed images outlive a run (a push is then a check). */
  registryStorage: string;
}

export const POD_SUBNET = '10.244.0.0/24';
export const CLUSTER_CIDR = '10.244.0.0/16';
export const SERVICE_CIDR = '10.96.0.0/16';
/** The `kubernetes` Service's ClusterIP: the first address of SERVICE_CIDR. */
export const API_SERVICE_IP = '10.96.0.1';
export const API_PORT = 6443;
export const KUBELET_PORT = 10250;
export const CLUSTER_DOMAIN = 'cluster.local';

export const paths = (base: string) => ({
  containerdConfig: `${base}/containerd/config.toml`,
  containerdRoot: `${base}/containerd/root`,
  containerdState: `${base}/containerd/state`,
  containerdSocket: `${base}/containerd/containerd.sock`,
  cniConfDir: `${base}/cni/net.d`,
  cniIpamDir: `${base}/cni/ipam`,
  kubeletConfig: `${base}/kubelet/config.yaml`,
  kubeletRoot: `${base}/kubelet/root`,
  podLogs: `${base}/pod-logs`,
  kubeProxyConfig: `${base}/kube-proxy.yaml`,
  corefile: `${base}/Corefile`,
  registryConfig: `${base}/registry.yml`,
  /** hostPath PersistentVolumes live under here. */
  volumes: `${base}/volumes`,
});

/**
 * containerd 1.6 (Debian's), version-2 config: its state under `base`, runc with cgroupfs, the
 * CNI bridge, a plain-HTTP local registry standing in for the ones the cluster would pull from.
 */
export function containerdToml(layout: NodeLayout): string {
  const p = paths(layout.base);
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  const mirrors = [...layout.mirrored, layout.registry].flatMap((host) => [
    `[${cri}.registry.mirrors."${host}"]`,
    `  endpoint = ["http://${layout.registry}"]`,
  ]);
  return [
    'version = 2',
    `root = "${p.containerdRoot}"`,
    `state = "${p.containerdState}"`,
    '',
    '[grpc]',
    `  address = "${p.containerdSocket}"`,
    '[ttrpc]',
    `  address = "${p.containerdSocket}.ttrpc"`,
    '[debug]',
    '  level = "warn"',
    '',
    `[${cri}]`,
    `  sandbox_image = "${layout.sandboxImage}"`,
    // runc cannot set the sandboxes' oom_score_adj of -998 without CAP_SYS_RESOURCE in the
    // bounding set, which these machines' sandbox may lack: every pod would fail to start.
    '  restrict_oom_score_adj = true',
    '  stream_server_address = "127.0.0.1"',
    '  stream_server_port = "0"',
    `[${cri}.containerd]`,
    '  snapshotter = "overlayfs"',
    '  default_runtime_name = "runc"',
    `[${cri}.containerd.runtimes.runc]`,
    '  runtime_type = "io.containerd.runc.v2"',
    `[${cri}.containerd.runtimes.runc.options]`,
    '  SystemdCgroup = false',
    `[${cri}.cni]`,
    `  bin_dir = "${layout.cniBinDir}"`,
    `  conf_dir = "${p.cniConfDir}"`,
    ...mirrors,
    '',
  ].join('\n');
}

/** One bridge for the node's pods, with NAT out and port mappings (host-local addresses). */
export function cniConflist(layout: NodeLayout): string {
  return `${JSON.stringify(
    {
      cniVersion: '0.4.0',
      name: 'kourier-pods',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipMasq: true,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: POD_SUBNET }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: paths(layout.base).cniIpamDir,
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}

export function kubeletConfigYaml(
  layout: NodeLayout,
  tls: { caPath: string; certPath: string; keyPath: string },
): string {
  const p = paths(layout.base);
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // `kubectl logs`, `exec` and `port-forward` go through the kubelet: the API server presents
    // its client certificate, and the kubelet asks the API server whether it may.
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: tls.caPath },
    },
    authorization: { mode: 'Webhook' },
    tlsCertFile: tls.certPath,
    tlsPrivateKeyFile: tls.keyPath,
    port: KUBELET_PORT,
    readOnlyPort: 0,
    containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
    // These machines have cgroup v1 and no systemd.
    cgroupDriver: 'cgroupfs',
    failCgroupV1: false,
    failSwapOn: false,
    clusterDNS: [layout.nodeIp],
    clusterDomain: CLUSTER_DOMAIN,
    podLogsDir: p.podLogs,
    // A small disk: evict only when it is all but full, and never collect images (they are
    // pulled from the local registry once and reused by every test).
    evictionHard: {
      'memory.available': '100Mi',
      'nodefs.available': '1%',
      'nodefs.inodesFree': '1%',
      'imagefs.available': '1%',
    },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    // Status reported often, so a test sees Ready/NotReady soon after the kubelet does.
    nodeStatusUpdateFrequency: '4s',
    syncFrequency: '10s',
  });
}

/** kube-proxy's /healthz: 200 once it has programmed the Services' rules. */
export const KUBE_PROXY_HEALTHZ_PORT = 10256;

export function kubeProxyConfigYaml(layout: NodeLayout, kubeconfigPath: string): string {
  return stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: kubeconfigPath },
    mode: 'iptables',
    clusterCIDR: CLUSTER_CIDR,
    hostnameOverride: layout.nodeName,
    // It may not set the conntrack sysctls here; zero leaves them as they are.
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    // Port 0 is refused; one cluster per machine, so its usual ports.
    metricsBindAddress: '127.0.0.1:10249',
    healthzBindAddress: `127.0.0.1:${KUBE_PROXY_HEALTHZ_PORT}`,
  });
}

/** Services and pods by name from the API server; anything else to the host's resolver. */
export function corefile(layout: NodeLayout, kubeconfigPath: string): string {
  return [
    '.:53 {',
    `  bind ${layout.nodeIp}`,
    '  errors',
    `  kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {`,
    `    kubeconfig ${kubeconfigPath}`,
    '    pods insecure',
    '    fallthrough in-addr.arpa ip6.arpa',
    '  }',
    '  forward . /etc/resolv.conf',
    '  cache 5',
    '}',
    '',
  ].join('\n');
}

/** distribution's registry: plain HTTP on loopback. */
export function registryConfigYaml(layout: NodeLayout): string {
  return stringify({
    version: 0.1,
    log: { level: 'warn', accesslog: { disabled: true } },
    storage: { filesystem: { rootdirectory: layout.registryStorage }, delete: { enabled: true } },
    http: { addr: layout.registry },
  });
}
