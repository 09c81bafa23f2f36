//! `chlo.top_k`: the k largest elements along the last dimension and their indices.
