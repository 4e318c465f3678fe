import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startLegacyApp } from './support/legacy-app';

/**
 * The test apps' data folders: these tests start hundreds of apps, and each folder left behind stays in the machine's
 * temp folder for good. Here the temp folder is one of the test's own, to see what is left in it (jest's
 * `process.env` is its own copy: TMPDIR set there does not reach `os.tmpdir()`).
 */
describe('legacy test apps leave no data folder behind', () => {
  let tmp: string;
  beforeEach(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'legacy-app-folders-'));
    jest.spyOn(os, 'tmpdir').mockReturnValue(tmp);
  });
  afterEach(() => {
    jest.restoreAllMocks();
    rmSync(tmp, { recursive: true, force: true });
  });

  it("makes no folder for an app over another app's store", async () => {
    const owner = await startLegacyApp();
    const other = await startLegacyApp({ store: owner.store });
    await other.stop();
    expect(readdirSync(tmp)).toEqual([path.basename(owner.dataDir)]);
    await owner.close();
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('makes none for a start refused for a bad setting', async () => {
    await expect(startLegacyApp({ env: { LEGACY_RETRAIN_DEBOUNCE_MS: 'soon' } })).rejects.toThrow(
      /LEGACY_RETRAIN_DEBOUNCE_MS/,
    );
    expect(readdirSync(tmp)).toEqual([]);
  });
});
