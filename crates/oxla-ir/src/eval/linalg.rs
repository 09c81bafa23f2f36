//! `cholesky` and `triangular_solve` on batched square matrices.
