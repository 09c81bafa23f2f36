/*
 * oxla.h: the C ABI of the oxla runtime (liboxla.so).
 *
 * Load a program artifact written by Python's `oxla.Program`
 * (`Program.get_compiled_artifact(p).save("prog.oxla")`) and call its
 * procedures; the program's globals live in the loaded module and carry over
 * between calls.
 *
 * Conventions:
 *  - Every function that can fail returns an oxla_status; on failure,
 *    oxla_last_error() describes it (per thread, until the next failing call).
 *  - Objects returned through an out-pointer are owned by the caller and are
 *    released with the matching *_free function. Passing NULL to a *_free
 *    function does nothing.
 *  - Tensors are dense, row-major, little-endian; booleans take one byte.
 *  - Calls on one module are serialized; different modules run independently.
 *  - No call aborts the process: bad arguments (including NULL pointers) are
 *    reported as OXLA_INVALID_ARGUMENT, internal failures as OXLA_INTERNAL.
 */
#ifndef OXLA_H_
#define OXLA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OXLA_C_API_VERSION 1

/* Status codes (the same numbers as absl::StatusCode). */
typedef enum oxla_status {
  OXLA_OK = 0,
  OXLA_INVALID_ARGUMENT = 3,
  OXLA_NOT_FOUND = 5,
  OXLA_RESOURCE_EXHAUSTED = 8,
  OXLA_FAILED_PRECONDITION = 9,
  OXLA_UNIMPLEMENTED = 12,
  OXLA_INTERNAL = 13
} oxla_status;

/* Element types (the same numbers as XLA's PrimitiveType). */
typedef enum oxla_dtype {
  OXLA_PRED = 1,
  OXLA_S8 = 2,
  OXLA_S16 = 3,
  OXLA_S32 = 4,
  OXLA_S64 = 5,
  OXLA_U8 = 6,
  OXLA_U16 = 7,
  OXLA_U32 = 8,
  OXLA_U64 = 9,
  OXLA_F16 = 10,
  OXLA_F32 = 11,
  OXLA_F64 = 12,
  OXLA_C64 = 15,
  OXLA_BF16 = 16,
  OXLA_C128 = 18
} oxla_dtype;

typedef struct oxla_module oxla_module;
typedef struct oxla_tensor oxla_tensor;

/* The C API version of the loaded library (OXLA_C_API_VERSION when it matches). */
int oxla_api_version(void);

/* The message of the last failed call on this thread ("" if none). Valid until
 * the next oxla call on this thread. */
const char* oxla_last_error(void);

/* --- modules ----------------------------------------------------------- */

/* Loads and compiles the artifact at `path`. */
oxla_status oxla_module_load(const char* path, oxla_module** out);
void oxla_module_free(oxla_module* module);

/* The procedures: their count, and the name of procedure `index` (NULL when
 * out of range; valid while the module lives). */
size_t oxla_module_num_functions(const oxla_module* module);
const char* oxla_module_function_name(const oxla_module* module, size_t index);

/* Calls procedure `function` with `num_inputs` inputs in signature order. On
 * success `*outputs` is a new array of `*num_outputs` tensors; release it with
 * oxla_tensors_free. Globals the procedure stores are updated. */
oxla_status oxla_module_call(oxla_module* module, const char* function,
                             const oxla_tensor* const* inputs,
                             size_t num_inputs, oxla_tensor*** outputs,
                             size_t* num_outputs);

/* Reads (a copy of) or replaces the value of a global, by name. */
oxla_status oxla_module_get_global(oxla_module* module, const char* name,
                                   oxla_tensor** out);
oxla_status oxla_module_set_global(oxla_module* module, const char* name,
                                   const oxla_tensor* value);

/* --- tensors ----------------------------------------------------------- */

/* A new tensor holding a copy of `num_bytes` bytes at `data` (which must be
 * exactly the dense size of the shape; `data` may be NULL when it is 0). */
oxla_status oxla_tensor_create(oxla_dtype dtype, const int64_t* dims,
                               size_t rank, const void* data,
                               size_t num_bytes, oxla_tensor** out);
void oxla_tensor_free(oxla_tensor* tensor);
/* Releases an output array from oxla_module_call and every tensor in it. */
void oxla_tensors_free(oxla_tensor** tensors, size_t count);

oxla_dtype oxla_tensor_dtype(const oxla_tensor* tensor);
size_t oxla_tensor_rank(const oxla_tensor* tensor);
/* `rank` extents, valid while the tensor lives. */
const int64_t* oxla_tensor_dims(const oxla_tensor* tensor);
const void* oxla_tensor_data(const oxla_tensor* tensor);
size_t oxla_tensor_num_bytes(const oxla_tensor* tensor);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OXLA_H_ */
