export async function runDemo(_rounds: number): Promise<void> {}
