// The test cluster's DNS: CoreDNS used as a library, with only the plugins a cluster's DNS
// needs (Services by name from the API server, everything else forwarded). Building its own
// main package keeps the cloud providers' plugins, and their modules, out of the build.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
)

// The order a query passes the plugins in, as CoreDNS's own plugin.cfg orders these.
func init() {
	dnsserver.Directives = []string{"bind", "errors", "log", "cache", "kubernetes", "forward"}
}

func main() {
	coremain.Run()
}
