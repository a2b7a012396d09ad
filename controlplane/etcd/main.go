// Command etcd is the etcd server, as upstream's etcd binary, built from the
// server module at the version the pinned Kubernetes release uses.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
