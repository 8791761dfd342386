; Synthetic benchmark 4: dependences with no pattern: read-after-write, write-after-read
; and write-after-write, between tasks of the same and of different classes, including
; regions that overlap without sharing a base.
real_fir      10 1 40 1 0 0 0 0
fft_256       18 8 60 8 1 0 0 0
iir           40 1 41 1 2 0 0 0
correlation   41 2 43 1 3 0 0 0
dct_64        11 1 10 1 4 0 0 0
vector_add    62 2 44 1 5 0 0 0
real_fir      12 1 41 1 6 0 0 0
complex_fir   43 2 45 2 7 0 0 0
vector_max    60 4 46 1 8 0 0 0
iir           46 1 47 1 9 0 0 0
dct_64        13 1 14 1 a 0 0 0
correlation   44 2 48 1 b 0 0 0
