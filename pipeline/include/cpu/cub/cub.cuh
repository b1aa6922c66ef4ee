// <cub/cub.cuh> for brrr's CPU execution: the block- and warp-level collectives public kernels use
// (BlockLoad, BlockStore, BlockReduce, BlockScan, WarpReduce and the reduction operators), each in
// its own header. Not provided: BlockExchange as a class of its own, BlockRadixSort, WarpScan, and
// the device-wide algorithms (cub::DeviceReduce and the like, which launch kernels of their own).
#pragma once
#include "block/block_load.cuh"
#include "block/block_reduce.cuh"
#include "block/block_scan.cuh"
#include "block/block_store.cuh"
#include "thread/thread_operators.cuh"
#include "warp/warp_reduce.cuh"
