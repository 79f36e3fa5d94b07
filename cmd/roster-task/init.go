package main

import "github.com/roster-sh/roster/lib/cli"

// InitCmd creates data/ and a commented org.toml.
type InitCmd struct{}

func (c *InitCmd) Run(g *cli.Globals, env *cli.Env) error { return errNotYet("init") }

// WorkerCmd groups the worker verbs.
type WorkerCmd struct{}
