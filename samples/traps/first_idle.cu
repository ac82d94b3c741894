// traps.cu, mode first_launch_idle: a kernel in a module (translation unit) of its own, first launched with
// nothing in flight.
__global__ void first_idle(int* out) { *out = 2; }
