// traps.cu, mode first_launch_busy: a kernel in a module (translation unit) of its own, first launched while a
// spin runs on another stream.
__global__ void first_busy(int* out) { *out = 1; }
