; Synthetic benchmark 1 (HTS paper, section VI-C): no dependency. Twelve tasks of six
; classes, each reading and writing regions of its own. With several instances per
; class, everything can run at once.
real_fir      10 1 40 1 0 0 0 0
real_fir      11 1 41 1 1 0 0 0
complex_fir   12 2 42 2 2 0 0 0
iir           14 1 44 1 3 0 0 0
iir           15 1 45 1 4 0 0 0
dct_64        16 1 46 1 5 0 0 0
dct_64        17 1 47 1 6 0 0 0
fft_256       18 8 48 8 7 0 0 0
correlation   20 2 50 1 8 0 0 0
correlation   22 2 51 1 9 0 0 0
vector_add    24 2 52 1 a 0 0 0
vector_add    26 2 53 1 b 0 0 0
