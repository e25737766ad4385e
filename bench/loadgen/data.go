package main

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
)

// The benchmark data is a pure function of (seed, record number): running
// produce twice with the same flags writes the same keys, values and headers
// (not the same timestamps, which are the time of writing).
//
// Record i goes to partition i % partitions. Its key is "bench-" and i in ten
// decimal digits (16 bytes, unique). Its value is `size` bytes: i and the seed
// (8 bytes each, big-endian), then a window of a pool of random bytes at a
// pseudo-random position, so values are unique and do not compress. Two
// headers: bench-seq (i, 8 bytes) and bench-origin ("loadgen").

const poolSize = 32 << 20

type dataGen struct {
	seed       uint64
	size       int
	partitions int
	pool       []byte
}

func newDataGen(seed uint64, size, partitions int) (*dataGen, error) {
	if size < 16 {
		return nil, fmt.Errorf("-size must be at least 16 bytes, not %d", size)
	}
	if partitions < 1 {
		return nil, fmt.Errorf("-partitions must be at least 1, not %d", partitions)
	}
	var key [32]byte
	binary.BigEndian.PutUint64(key[:], seed)
	src := rand.NewChaCha8(key)
	pool := make([]byte, poolSize+size)
	_, _ = src.Read(pool)
	return &dataGen{seed: seed, size: size, partitions: partitions, pool: pool}, nil
}

func (g *dataGen) partition(i int64) int32 { return int32(i % int64(g.partitions)) }

func (g *dataGen) key(i int64) []byte { return fmt.Appendf(make([]byte, 0, 16), "bench-%010d", i) }

// value writes record i's value into dst (len(dst) == size).
func (g *dataGen) value(i int64, dst []byte) {
	binary.BigEndian.PutUint64(dst[0:8], uint64(i))
	binary.BigEndian.PutUint64(dst[8:16], g.seed)
	off := int(splitmix64(uint64(i)^g.seed) % poolSize)
	copy(dst[16:], g.pool[off:off+g.size-16])
}

func (g *dataGen) seqHeader(i int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(i))
	return b
}

var originHeader = []byte("loadgen")

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
