// <cub/cub.cuh> for brrr's CPU execution: the block- and warp-level collectives public kernels use
// (BlockReduce, BlockScan, WarpReduce and the reduction operators), each in its own header. Not
// provided: BlockLoad/BlockStore/BlockExchange, BlockRadixSort, WarpScan, and the device-wide
// algorithms (cub::DeviceReduce and the like, which launch kernels of their own).
#pragma once
#include "block/block_reduce.cuh"
#include "block/block_scan.cuh"
#include "thread/thread_operators.cuh"
#include "warp/warp_reduce.cuh"
