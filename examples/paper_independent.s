real_fir 10 2 13 2 0 0 0 0000
complex_fir 16 2 19 2 1 0 0 0000
adaptive_fir 23 3 28 3 2 0 0 0000
vector_dot 40 4 48 4 3 0 0 0000
iir 32 3 36 3 4 0 0 0000
