// Work-group reductions in local memory, shared by the programs that reduce rows (ops.cl,
// attention.cl): compiled in front of each of them. TS_WG (a power of two) is a build option;
// every work-item of the group must call them (they hold barriers).

// Sums v over the work-group (every work-item gets the total). scratch: TS_WG floats.
inline float group_sum(float v, __local float* scratch, int lid) {
  scratch[lid] = v;
  for (int s = TS_WG / 2; s > 0; s >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < s) scratch[lid] += scratch[lid + s];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const float total = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);  // scratch is reused by the caller's next reduction
  return total;
}

inline float group_max(float v, __local float* scratch, int lid) {
  scratch[lid] = v;
  for (int s = TS_WG / 2; s > 0; s >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < s) scratch[lid] = fmax(scratch[lid], scratch[lid + s]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const float total = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return total;
}
