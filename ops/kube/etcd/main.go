// Command etcd is etcd's own server entry point (etcdmain.Main), built from the
// go.etcd.io/etcd/server/v3 module pinned in go.mod; see ops/local_kube.py.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
