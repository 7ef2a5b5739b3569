// The pod sandbox ("pause") process of the test cluster's containerd: it holds a pod's
// namespaces and does nothing until it is told to stop. No registry is reachable from the test
// machines, so the sandbox image is built here from this file (test/cluster/images.ts).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
