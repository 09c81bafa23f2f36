//! `fft`: FFT, IFFT, RFFT and IRFFT over the trailing one to three dimensions.
