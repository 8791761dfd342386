; Synthetic benchmark 3: dependences only between tasks of different classes (an FFT
; feeding a correlation, a FIR feeding an IIR, ...). Three chains across classes.
fft_256       18 8 60 8 0 0 0 0
vector_dot    60 2 70 1 1 0 0 0
vector_max    70 1 71 1 2 0 0 0
real_fir      10 1 40 1 3 0 0 0
iir           40 1 41 1 4 0 0 0
dct_64        41 1 42 1 5 0 0 0
correlation   42 2 43 1 6 0 0 0
complex_fir   12 2 44 2 7 0 0 0
vector_add    44 2 46 1 8 0 0 0
real_fir      46 1 47 1 9 0 0 0
iir           47 1 48 1 a 0 0 0
vector_max    48 1 49 1 b 0 0 0
