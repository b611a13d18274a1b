// CoreDNS for the testenv's real node (tools/testenv/testenv up --real-node) with only the plugins
// the Corefile there uses. CoreDNS's own main imports core/plugin, every plugin, whose cloud
// backends (route53, azure, clouddns, ...) pull in their SDKs; this one imports ten.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The plugins run in the order of dnsserver.Directives (CoreDNS's full list; the ones not
// imported here are simply unavailable).
func main() {
	coremain.Run()
}
