; Synthetic benchmark 2: dependences only between tasks of the same class (a FIR feeding
; a FIR, an FFT feeding an FFT). Each chain is serial; the chains run side by side.
real_fir      10 1 40 1 0 0 0 0
real_fir      40 1 41 1 1 0 0 0
real_fir      41 1 42 1 2 0 0 0
iir           11 1 43 1 3 0 0 0
iir           43 1 44 1 4 0 0 0
iir           44 1 45 1 5 0 0 0
dct_64        12 1 46 1 6 0 0 0
dct_64        46 1 47 1 7 0 0 0
fft_256       18 8 60 8 8 0 0 0
fft_256       60 8 70 8 9 0 0 1
correlation   20 2 50 2 a 0 0 0
correlation   50 2 52 2 b 0 0 0
