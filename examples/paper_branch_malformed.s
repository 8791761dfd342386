mov 3 0 a 00 0 0 0001
real_fir 102 13 2 0 0 0 0000
complex_fir 16 2 19 2 1 0 0 0000
if 93 a 12 0 1 0 d 0000
adaptive_fir 23 3 28 3 2 0 0 0000
iir 32 3 36 3 3 0 0 0000
vector_dot 40 4 48 4 4 0 0 0000
vector_add 55 4 62 4 5 0 0 0000
vector_max 68 5 76 5 6 0 0 0000
fft_256 84 6 93 6 7 0 0 0000
dct_64 102 2 106 2 8 0 0 0000
correlation 110 3 115 3 9 0 0 0000
