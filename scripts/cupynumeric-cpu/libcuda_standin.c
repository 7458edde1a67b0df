/*
 * A stand-in for the CUDA driver library (libcuda.so.1) on machines WITHOUT an NVIDIA GPU.
 *
 * The PyPI wheels of legate/cupynumeric are CUDA builds whose libraries list libcuda.so.1 as
 * needed at load time. With this library in its place they load and run on the CPU: it says
 * "driver present, no device", so Legate starts with CPU processors only.
 *
 * Only liblegion-legate.so links driver functions directly: cuGetErrorName, cuGetErrorString,
 * cuMemFreeHost and cuMemFree_v2 (`nm -D --undefined-only` on the .so files in legate/lib64).
 * Realm and libcudart reach every other driver function through cuGetProcAddress(_v2), which
 * must never hand back NULL. Every function here that is not a query fails with
 * CUDA_ERROR_NO_DEVICE.
 *
 * NEVER install this where a real driver exists: it would shadow the GPU (install.sh checks).
 *
 * Build: gcc -O2 -shared -fPIC -Wl,-soname,libcuda.so.1 -o libcuda.so.1 libcuda_standin.c
 */

#include <stddef.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_NO_DEVICE = 100,
};

/* Lets install.sh and TensorWeaver's diagnosis tell this file from a real driver. */
__attribute__((used)) static const char standin_marker[] = "tensorweaver-libcuda-standin";

/* Reported by cuDriverGetVersion: new enough for the CUDA 13 runtime the wheels use. */
#define STANDIN_DRIVER_VERSION 13000

CUresult cuInit(unsigned int flags) {
    (void)flags;
    return CUDA_ERROR_NO_DEVICE;
}

CUresult cuDriverGetVersion(int *version) {
    if (version != NULL) *version = STANDIN_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
    if (count != NULL) *count = 0;
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
    if (name != NULL) {
        *name = error == CUDA_SUCCESS           ? "CUDA_SUCCESS"
                : error == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE"
                                                : "CUDA_ERROR_UNKNOWN";
    }
    return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
    if (text != NULL) {
        *text = error == CUDA_SUCCESS ? "no error"
                : error == CUDA_ERROR_NO_DEVICE
                    ? "no CUDA-capable device is detected (CPU stand-in libcuda.so.1)"
                    : "unknown error (CPU stand-in libcuda.so.1)";
    }
    return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void *p) {
    (void)p;
    return CUDA_ERROR_NO_DEVICE;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
    (void)p;
    return CUDA_ERROR_NO_DEVICE;
}

/* What cuGetProcAddress hands out for every name it does not implement itself. The driver
 * API's calling convention lets a caller pass any arguments to a function that ignores them. */
static CUresult no_device(void) {
    return CUDA_ERROR_NO_DEVICE;
}

static void *lookup(const char *symbol) {
    static const struct {
        const char *name;
        void *fn;
    } known[] = {
        {"cuInit", (void *)cuInit},
        {"cuDriverGetVersion", (void *)cuDriverGetVersion},
        {"cuDeviceGetCount", (void *)cuDeviceGetCount},
        {"cuGetErrorName", (void *)cuGetErrorName},
        {"cuGetErrorString", (void *)cuGetErrorString},
    };
    if (symbol != NULL) {
        for (size_t i = 0; i < sizeof known / sizeof known[0]; ++i) {
            if (strcmp(symbol, known[i].name) == 0) return known[i].fn;
        }
    }
    return (void *)no_device;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags) {
    (void)cuda_version;
    (void)flags;
    if (pfn != NULL) *pfn = lookup(symbol);
    return CUDA_SUCCESS;
}

/* The last argument is a CUdriverProcAddressQueryResult*; 0 is CU_GET_PROC_ADDRESS_SUCCESS. */
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags,
                             int *symbol_status) {
    if (symbol_status != NULL) *symbol_status = 0;
    return cuGetProcAddress(symbol, pfn, cuda_version, flags);
}
