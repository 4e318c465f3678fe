import { stopLivePlatforms } from './live-platforms';

// Runs after each test file's own hooks; a platform its test stopped is no longer noted.
afterAll(stopLivePlatforms, 120_000);
