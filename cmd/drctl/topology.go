package main

import (
	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/topology"
)

// loadTopology finds and loads the topology file; a problem with it is bad
// input (exit 2) and nothing is contacted.
func loadTopology(c *cli.Context) (*topology.Topology, error) {
	path, err := topology.Discover(c.String("config"))
	if err != nil {
		return nil, withCode(exitBadInput, err)
	}
	topo, err := topology.Load(path)
	if err != nil {
		return nil, withCode(exitBadInput, err)
	}
	return topo, nil
}
