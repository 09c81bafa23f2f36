/* Loads trivial.oxla through the C ABI, calls `run` twice and checks the
 * results and the stored global; also checks that errors come back as codes.
 * Usage: run_trivial PATH/trivial.oxla; exit status 0 on success. */
#include <stdio.h>
#include <string.h>

#include "oxla.h"

#define CHECK(cond, ...)                                     \
  do {                                                       \
    if (!(cond)) {                                           \
      fprintf(stderr, "%s:%d: check failed: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                          \
      fprintf(stderr, " (last error: %s)\n", oxla_last_error()); \
      return 1;                                              \
    }                                                        \
  } while (0)

static int all_equal(const oxla_tensor* t, float want) {
  const float* v = (const float*)oxla_tensor_data(t);
  size_t n = oxla_tensor_num_bytes(t) / sizeof(float);
  for (size_t i = 0; i < n; i++) {
    if (v[i] != want) return 0;
  }
  return n == 12;
}

int main(int argc, char** argv) {
  CHECK(argc == 2, "usage: %s ARTIFACT", argv[0]);
  CHECK(oxla_api_version() == OXLA_C_API_VERSION, "api version");

  oxla_module* module = NULL;
  CHECK(oxla_module_load("/nonexistent/x.oxla", &module) == OXLA_NOT_FOUND,
        "missing file");
  CHECK(strlen(oxla_last_error()) > 0, "error message");
  CHECK(oxla_module_load(argv[1], &module) == OXLA_OK, "load");
  CHECK(oxla_module_num_functions(module) == 3, "3 procedures");
  CHECK(strcmp(oxla_module_function_name(module, 1), "run") == 0, "name");
  CHECK(oxla_module_function_name(module, 3) == NULL, "out of range");

  float ones[12], twos[12];
  for (int i = 0; i < 12; i++) { ones[i] = 1.0f; twos[i] = 2.0f; }
  int64_t dims[2] = {3, 4};
  oxla_tensor* m1 = NULL;
  oxla_tensor* m2 = NULL;
  CHECK(oxla_tensor_create(OXLA_F32, dims, 2, ones, sizeof ones, &m1) == OXLA_OK, "create");
  CHECK(oxla_tensor_create(OXLA_F32, dims, 2, twos, sizeof twos, &m2) == OXLA_OK, "create");
  oxla_tensor* bad = NULL;
  CHECK(oxla_tensor_create(OXLA_F32, dims, 2, ones, 7, &bad) == OXLA_INVALID_ARGUMENT,
        "byte count checked");

  /* run(m) = m * x + b with x = 4, b = 1, and stores the result into x. */
  const oxla_tensor* inputs[1] = {m1};
  oxla_tensor** outputs = NULL;
  size_t num_outputs = 0;
  CHECK(oxla_module_call(module, "run", inputs, 1, &outputs, &num_outputs) == OXLA_OK, "call");
  CHECK(num_outputs == 1, "one output");
  CHECK(oxla_tensor_dtype(outputs[0]) == OXLA_F32, "dtype");
  CHECK(oxla_tensor_rank(outputs[0]) == 2 && oxla_tensor_dims(outputs[0])[1] == 4, "shape");
  CHECK(all_equal(outputs[0], 5.0f), "first run gives 5");
  oxla_tensors_free(outputs, num_outputs);

  inputs[0] = m2;
  CHECK(oxla_module_call(module, "run", inputs, 1, &outputs, &num_outputs) == OXLA_OK, "call");
  CHECK(all_equal(outputs[0], 11.0f), "second run sees the stored x: 2 * 5 + 1");
  oxla_tensors_free(outputs, num_outputs);

  oxla_tensor* x = NULL;
  CHECK(oxla_module_get_global(module, "_params['x']", &x) == OXLA_OK, "get global");
  CHECK(all_equal(x, 11.0f), "global x");
  CHECK(oxla_module_set_global(module, "_params['x']", m1) == OXLA_OK, "set global");
  oxla_tensor_free(x);

  CHECK(oxla_module_call(module, "nope", inputs, 1, &outputs, &num_outputs) == OXLA_NOT_FOUND,
        "unknown procedure");
  CHECK(oxla_module_call(module, "run", inputs, 0, &outputs, &num_outputs) ==
            OXLA_INVALID_ARGUMENT, "missing input");
  CHECK(oxla_module_call(NULL, "run", inputs, 1, &outputs, &num_outputs) ==
            OXLA_INVALID_ARGUMENT, "null module");
  CHECK(oxla_module_call(module, "run", NULL, 1, &outputs, &num_outputs) ==
            OXLA_INVALID_ARGUMENT, "null inputs");

  inputs[0] = m1;
  CHECK(oxla_module_call(module, "run", inputs, 1, &outputs, &num_outputs) == OXLA_OK, "call");
  CHECK(all_equal(outputs[0], 2.0f), "after set_global: 1 * 1 + 1");
  oxla_tensors_free(outputs, num_outputs);

  oxla_tensor_free(m1);
  oxla_tensor_free(m2);
  oxla_module_free(module);
  oxla_module_free(NULL);
  printf("c runtime test passed\n");
  return 0;
}
