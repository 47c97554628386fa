// The OpenCL library, loaded at run time with dlopen("libOpenCL.so.1") (the ICD loader every
// OpenCL driver installs) instead of linked, so one binary runs on machines without any OpenCL:
// there, opencl_api() returns one clear error and nothing else changes. Only OpenCL 1.2 entry
// points are resolved (what PoCL, NVIDIA, AMD and Intel drivers all provide). Internal to the
// device layer: the rest of Tessera reaches OpenCL through Device, Buffer, Program and Kernel.
// Thread-safety: opencl_api() loads once (a function-local static) and may be called from any
// thread; the table is immutable afterwards; the OpenCL functions themselves are thread-safe
// except clSetKernelArg on one kernel object (OpenCL 1.2 spec, appendix A.2).
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "tessera/base/status.h"

namespace tessera::device {

// One pointer per OpenCL function the device layer calls; all non-null once loaded.
struct OpenClApi {
#define TESSERA_CL_FUNCTIONS(X)                                                                  \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo)                  \
  X(clCreateContext) X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue)        \
  X(clCreateBuffer) X(clReleaseMemObject) X(clEnqueueWriteBuffer) X(clEnqueueReadBuffer)         \
  X(clEnqueueCopyBuffer) X(clCreateProgramWithSource) X(clBuildProgram)                         \
  X(clGetProgramBuildInfo) X(clReleaseProgram) X(clCreateKernel) X(clReleaseKernel)              \
  X(clSetKernelArg) X(clGetKernelWorkGroupInfo) X(clEnqueueNDRangeKernel) X(clFinish)            \
  X(clFlush) X(clWaitForEvents) X(clReleaseEvent) X(clGetEventInfo)
#define TESSERA_CL_MEMBER(name) decltype(&::name) name = nullptr;
  TESSERA_CL_FUNCTIONS(TESSERA_CL_MEMBER)
#undef TESSERA_CL_MEMBER
};

// The loaded library's functions, or kUnavailable with one line naming what is missing ("no
// OpenCL library: libOpenCL.so.1: cannot open shared object file ...; install an OpenCL driver,
// e.g. Debian's pocl-opencl-icd"). $TESSERA_OPENCL_LIBRARY names another file to load (a
// driver's library outside the loader's path). The library stays loaded for the process's life.
Result<const OpenClApi*> opencl_api();

}  // namespace tessera::device
